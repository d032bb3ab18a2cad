import { ROOT_CONTEXT, propagation, trace, type BaggageEntry, type Context, type Link } from '@opentelemetry/api';
import { MAX_BAGGAGE_BYTES, filterInboundBaggage, type KeepBaggage } from './baggage-entries.js';
import { withoutBaggageOws } from './baggage-ows.js';
import { INBOUND_KEEP_BAGGAGE_KEY } from './context-keys.js';

/**
 * What an inbound trace parent (`traceparent`, or the `b3`, X-B3-* or `uber-trace-id` headers
 * OTEL_PROPAGATORS names) may do: `trust` parents our trace under it, `link` starts a
 * new trace linked to it, `ignore` drops it, `auto` trusts authenticated requests only.
 */
export type TraceparentPolicy = 'trust' | 'link' | 'ignore' | 'auto';

export interface InboundOptions {
  readonly traceparent?: TraceparentPolicy;
  /** Whether the request proved who sent it (a bearer token, a platform signature). */
  readonly authenticated?: boolean;
  /** Foreign baggage to keep (default none); threadline's own keys are always dropped. */
  readonly keepBaggage?: KeepBaggage;
}

/** The context to handle an inbound message in; start the root span with `links`. */
export interface InboundTrace {
  readonly context: Context;
  readonly links: Link[];
  /** Inbound baggage members dropped by policy or limits; worth a span attribute. */
  readonly droppedBaggage: number;
}

export type InboundHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

export const INBOUND_LINK_ATTRIBUTE = 'threadline.link';
// A receiver reads only a traceparent's first 56 characters (55 for version 00, and the '-'
// that starts a future version's further fields), so a longer one is cut, not refused.
// b3, X-B3-* and uber-trace-id are shorter still: longer ones are refused.
const MAX_TRACEPARENT_LENGTH = 128;
const MAX_TRACE_HEADER_LENGTH = MAX_TRACEPARENT_LENGTH;
/** Read under limits of their own. */
const OWN_LIMITS = new Set(['traceparent', 'tracestate', 'baggage']);
/** Baggage in other propagators' formats: never read, since it could name a chat. */
const FOREIGN_BAGGAGE_PREFIXES = ['uberctx-', 'ot-baggage-'];

/**
 * Builds the context for an inbound message from its HTTP headers (lowercase names, as
 * node:http gives them), trusting nothing it need not: session routing never comes from
 * headers (pitfall: Routing taken from inbound baggage), baggage is bounded before and after parsing, and the trace parent
 * obeys `options.traceparent`. Never throws on malformed input: what cannot be parsed is
 * dropped.
 */
export function inboundContext(headers: InboundHeaders, options: InboundOptions = {}): InboundTrace {
  const carrier: Record<string, string> = {};
  const traceparent = single(headers['traceparent']);
  if (traceparent !== undefined) {
    carrier['traceparent'] = traceparent.slice(0, MAX_TRACEPARENT_LENGTH);
    // Cut member by member to the W3C limits by the propagator, not dropped whole here.
    const tracestate = joined(headers['tracestate']);
    if (tracestate !== undefined) carrier['tracestate'] = tracestate;
  }
  copyTraceHeaders(headers, carrier);
  // Judged without optional whitespace, which the W3C limit of 8192 bytes does not count.
  const rawBaggage = joined(headers['baggage']);
  const baggageHeader = rawBaggage === undefined ? undefined : withoutBaggageOws(rawBaggage);
  if (baggageHeader !== undefined && Buffer.byteLength(baggageHeader) <= MAX_BAGGAGE_BYTES) carrier['baggage'] = baggageHeader;
  const keepBaggage = options.keepBaggage ?? false;
  // Tells threadline's propagator to keep what this call asked for, not its start-up default.
  let ctx = propagation
    .extract(ROOT_CONTEXT.setValue(INBOUND_KEEP_BAGGAGE_KEY, keepBaggage), carrier)
    .deleteValue(INBOUND_KEEP_BAGGAGE_KEY);

  let links: Link[] = [];
  const parent = trace.getSpanContext(ctx);
  if (parent !== undefined) {
    const policy = resolvePolicy(options);
    if (policy !== 'trust') ctx = trace.deleteSpan(ctx);
    if (policy === 'link') links = [{ context: parent, attributes: { [INBOUND_LINK_ATTRIBUTE]: 'inbound' } }];
  }

  // The global propagator may have filtered already; filtering again keeps this function
  // safe whichever propagator is registered.
  const baggage = propagation.getBaggage(ctx);
  let kept = 0;
  if (baggage !== undefined) {
    const { entries } = filterInboundBaggage(baggage, keepBaggage);
    kept = Object.keys(entries).length;
    ctx = withBaggageEntries(ctx, entries);
  }
  // Counted against the raw header, so malformed and oversized members count as dropped.
  const droppedBaggage = countRawMembers(headers['baggage']) - kept;
  return { context: ctx, links, droppedBaggage };
}

/**
 * The trace headers of the other configured propagators (OTEL_PROPAGATORS: b3, X-B3-*,
 * uber-trace-id), bounded like traceparent, so the same parent policy applies to them.
 */
function copyTraceHeaders(headers: InboundHeaders, carrier: Record<string, string>): void {
  for (const field of propagation.fields()) {
    const name = field.toLowerCase();
    if (OWN_LIMITS.has(name) || FOREIGN_BAGGAGE_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    const value = single(headers[name]);
    if (value !== undefined && value.length <= MAX_TRACE_HEADER_LENGTH) carrier[name] = value;
  }
}

/** THREADLINE_INBOUND_BAGGAGE as `keepBaggage`: `none` or unset keeps none, `all` all, else the listed keys. */
export function parseKeepBaggage(value: string | undefined): KeepBaggage {
  const trimmed = (value ?? '').trim();
  if (trimmed === 'none' || trimmed === '') return false;
  if (trimmed === 'all') return true;
  return trimmed.split(',').map((key) => key.trim()).filter((key) => key !== '');
}

/** `ctx` with exactly `entries` as its baggage (none when empty). */
export function withBaggageEntries(ctx: Context, entries: Record<string, BaggageEntry>): Context {
  return Object.keys(entries).length === 0
    ? propagation.deleteBaggage(ctx)
    : propagation.setBaggage(ctx, propagation.createBaggage(entries));
}

function resolvePolicy(options: InboundOptions): Exclude<TraceparentPolicy, 'auto'> {
  const policy = options.traceparent ?? 'auto';
  if (policy !== 'auto') return policy;
  return options.authenticated === true ? 'trust' : 'link';
}

function countMembers(header: string): number {
  let members = 0;
  for (const member of header.split(',')) if (member.trim() !== '') members++;
  return members;
}

/** Members of the raw header as received; a part that is not a string counts as one. */
function countRawMembers(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string') return countMembers(value);
  if (!Array.isArray(value)) return 1;
  let members = 0;
  for (const part of value) members += typeof part === 'string' ? countMembers(part) : 1;
  return members;
}

/** A header that must appear once: repeated or non-string means malformed. */
function single(value: string | readonly string[] | undefined): string | undefined {
  if (typeof value === 'string') return value;
  return Array.isArray(value) && value.length === 1 && typeof value[0] === 'string' ? value[0] : undefined;
}

/** A list header that may be split over several lines (RFC 9110 section 5.3). */
function joined(value: string | readonly string[] | undefined): string | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || !value.every((part) => typeof part === 'string')) return undefined;
  return value.join(',');
}
