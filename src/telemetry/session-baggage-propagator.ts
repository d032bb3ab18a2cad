import {
  propagation,
  trace,
  type Context,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api';
import { W3CBaggagePropagator, isTracingSuppressed } from '@opentelemetry/core';
import {
  DEFAULT_OUTBOUND_POLICY,
  DESTINATION_HOST_KEY,
  INBOUND_KEEP_BAGGAGE_KEY,
  filterInboundBaggage,
  outboundBaggageHeader,
  withBaggageEntries,
  withoutBaggageOws,
  type KeepBaggage,
  type OutboundBaggagePolicy,
} from '../session/index.js';

const BAGGAGE_HEADER = 'baggage';

/**
 * The W3C baggage propagator with threadline's policies around it.
 *
 * Inject: threadline keys go out only as the outbound policy allows for the destination
 * host, taken from outboundHeaders() or from the client span an instrumentation injects
 * with (server.address, net.peer.name or url.full).
 *
 * Extract: threadline keys are dropped whatever their case, and other members kept only
 * when `keepInboundBaggage`, or the inboundContext() call extracting, says so. The W3C
 * parser underneath is bounded (opentelemetry-js core >= 2.8.0) and is handed the header
 * without optional whitespace, so its limits count what the W3C limits count; inboundContext()
 * bounds the header the same way before it gets here.
 */
export class SessionBaggagePropagator implements TextMapPropagator {
  private readonly w3c = new W3CBaggagePropagator();

  constructor(
    private readonly policy: OutboundBaggagePolicy = DEFAULT_OUTBOUND_POLICY,
    private readonly keepInboundBaggage: KeepBaggage = false,
  ) {}

  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    // As the W3C propagator: where tracing is suppressed (an instrumentation inside a call
    // that already injected) nothing is written, so no second header escapes the host policy.
    if (isTracingSuppressed(ctx)) return;
    const baggage = propagation.getBaggage(ctx);
    if (baggage === undefined) return;
    // Serialized here, where the entries are bounded, not again by the W3C propagator.
    const header = outboundBaggageHeader(baggage, this.policy, destinationHost(ctx));
    if (header !== '') setter.set(carrier, BAGGAGE_HEADER, header);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    const extracted = this.w3c.extract(ctx, carrier, withoutOws(getter));
    const baggage = propagation.getBaggage(extracted);
    if (extracted === ctx || baggage === undefined) return extracted;
    // inboundContext() passes its caller's choice; anything else gets the start-up default.
    const keep = (ctx.getValue(INBOUND_KEEP_BAGGAGE_KEY) as KeepBaggage | undefined) ?? this.keepInboundBaggage;
    return withBaggageEntries(extracted, filterInboundBaggage(baggage, keep).entries);
  }

  fields(): string[] {
    return this.w3c.fields();
  }
}

/** `getter` with the baggage header's optional whitespace removed, one header or several. */
function withoutOws(getter: TextMapGetter): TextMapGetter {
  return {
    keys: (carrier) => getter.keys(carrier),
    get: (carrier, key) => {
      const value = getter.get(carrier, key);
      if (key !== BAGGAGE_HEADER || value === undefined) return value;
      return Array.isArray(value) ? value.map(withoutBaggageOws) : withoutBaggageOws(value);
    },
  };
}

/** The host an injection is for, when known. */
function destinationHost(ctx: Context): string | undefined {
  const marked = ctx.getValue(DESTINATION_HOST_KEY);
  if (typeof marked === 'string') return marked;
  const attributes = (trace.getSpan(ctx) as { attributes?: Record<string, unknown> } | undefined)?.attributes;
  if (attributes === undefined) return undefined;
  const address = attributes['server.address'] ?? attributes['net.peer.name'];
  if (typeof address === 'string') return address;
  const url = attributes['url.full'] ?? attributes['http.url'];
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
