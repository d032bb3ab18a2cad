import { propagation, type Context, type TextMapGetter, type TextMapPropagator, type TextMapSetter } from '@opentelemetry/api';
import { CompositePropagator } from '@opentelemetry/core';
import { B3InjectEncoding, B3Propagator } from '@opentelemetry/propagator-b3';
import { JaegerPropagator } from '@opentelemetry/propagator-jaeger';
import { SessionBaggagePropagator } from './session-baggage-propagator.js';
import { TraceContextPropagator } from './trace-context-propagator.js';
import type { PropagatorName, TelemetryConfig } from './telemetry-config.js';

/** What the propagator is built from; without `propagators`, OTEL_PROPAGATORS' default. */
export type PropagatorSettings = Pick<TelemetryConfig, 'outboundBaggage' | 'inboundBaggage'> & Partial<Pick<TelemetryConfig, 'propagators'>>;

const DEFAULT_PROPAGATORS: readonly PropagatorName[] = ['tracecontext', 'baggage'];

/**
 * The propagators OTEL_PROPAGATORS names, in its order, as one. threadline's
 * SessionBaggagePropagator is always among them, whatever the list says (at `baggage`'s
 * place, else last): routing travels in W3C baggage under the outbound and inbound policies,
 * and it is the only carrier of baggage, so no other format sends it past those policies.
 */
export function createPropagator(settings?: PropagatorSettings): TextMapPropagator {
  const session = new SessionBaggagePropagator(settings?.outboundBaggage, settings?.inboundBaggage);
  const names = settings?.propagators ?? DEFAULT_PROPAGATORS;
  const propagators = names.flatMap((name) => standardPropagator(name, session));
  if (!propagators.includes(session)) propagators.push(session);
  return new CompositePropagator({ propagators });
}

function standardPropagator(name: PropagatorName, session: SessionBaggagePropagator): TextMapPropagator[] {
  switch (name) {
    case 'tracecontext':
      return [new TraceContextPropagator()];
    case 'baggage':
      return [session];
    case 'b3':
      return [new B3Propagator({ injectEncoding: B3InjectEncoding.SINGLE_HEADER })];
    case 'b3multi':
      return [new B3Propagator({ injectEncoding: B3InjectEncoding.MULTI_HEADER })];
    case 'jaeger':
      return [new JaegerTraceContextPropagator()];
    case 'none':
      return [];
  }
}

/**
 * Jaeger's uber-trace-id without its uberctx-* baggage headers: those would send every
 * baggage entry, session keys included, to any host, and would let a caller set them.
 */
class JaegerTraceContextPropagator implements TextMapPropagator {
  private readonly jaeger = new JaegerPropagator();

  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    this.jaeger.inject(propagation.deleteBaggage(ctx), carrier, setter);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    // With no keys listed, the Jaeger propagator finds no uberctx-* header to read.
    return this.jaeger.extract(ctx, carrier, { get: (from, key) => getter.get(from, key), keys: () => [] });
  }

  fields(): string[] {
    return this.jaeger.fields();
  }
}
