import type { Baggage, BaggageEntry } from '@opentelemetry/api';
import { isSessionNamespaceKey } from './names.js';
import { routingFields } from './routing-fields.js';
import type { Session } from './session.js';

/** W3C baggage limits: at most 64 members and 8192 bytes in all (W3C Baggage, section 3.3.1). */
export const MAX_BAGGAGE_MEMBERS = 64;
export const MAX_BAGGAGE_BYTES = 8192;

/** The session's baggage entries: its routing fields, never its names. */
export function sessionBaggageEntries(session: Session): Record<string, BaggageEntry> {
  const entries: Record<string, BaggageEntry> = {};
  for (const [key, value] of Object.entries(routingFields(session))) entries[key] = { value };
  return entries;
}

/** Baggage kept within the limits, and how many entries were left out. */
export interface BoundedBaggage {
  readonly entries: Record<string, BaggageEntry>;
  readonly dropped: number;
}

type Keep = (key: string, entry: BaggageEntry) => boolean;

/** Keeps the entries `keep` accepts, within the W3C limits, in order. */
export function boundedEntries(baggage: Baggage, keep: Keep): BoundedBaggage {
  const entries: Record<string, BaggageEntry> = {};
  const dropped = eachWithinLimits(baggage, keep, (key, entry) => {
    entries[key] = entry;
  });
  return { entries, dropped };
}

/**
 * The entries `boundedEntries` would keep, as a `baggage` header value; '' when none. Each
 * member is written as the W3C spec asks: unlike OpenTelemetry's propagator, keys are not
 * percent-encoded (they are tokens), and a member over
 * 4096 bytes is not dropped: the W3C limits are 64 members and 8192 bytes, and threadline's
 * own members are far smaller (ids of at most 256 characters).
 */
export function boundedHeader(baggage: Baggage, keep: Keep): string {
  let header = '';
  eachWithinLimits(baggage, keep, (_key, _entry, member) => {
    header += header === '' ? member : `,${member}`;
  });
  return header;
}

/**
 * Calls `take` for each entry `keep` accepts that still fits the W3C limits, threadline's own
 * first so foreign ones can never crowd them out, with the entry serialized as a list member
 * (value percent-encoded, as its size is counted); a key that is not a token is left out.
 * Returns how many entries were left out.
 */
function eachWithinLimits(baggage: Baggage, keep: Keep, take: (key: string, entry: BaggageEntry, member: string) => void): number {
  let bytes = 0;
  let members = 0;
  let dropped = 0;
  const own: [string, BaggageEntry][] = [];
  const foreign: [string, BaggageEntry][] = [];
  for (const pair of baggage.getAllEntries()) (isSessionNamespaceKey(pair[0]) ? own : foreign).push(pair);
  for (const [key, entry] of own.concat(foreign)) {
    if (!keep(key, entry)) {
      dropped++;
      continue;
    }
    const member = serializeMember(key, entry);
    if (member === undefined) {
      dropped++;
      continue;
    }
    const size = member.length + (members === 0 ? 0 : 1);
    if (members >= MAX_BAGGAGE_MEMBERS || bytes + size > MAX_BAGGAGE_BYTES) {
      dropped++;
      continue;
    }
    take(key, entry, member);
    bytes += size;
    members++;
  }
  return dropped;
}

/**
 * Which foreign (non-threadline) inbound baggage to keep: false keeps none, true keeps all,
 * a list keeps those keys. threadline's own keys are always dropped.
 */
export type KeepBaggage = boolean | readonly string[];

/** Filters inbound baggage: never threadline's keys, foreign ones per `keep`, within the limits. */
export function filterInboundBaggage(baggage: Baggage, keep: KeepBaggage): BoundedBaggage {
  if (keep === false) return { entries: {}, dropped: baggage.getAllEntries().length };
  const allowed = keep === true ? undefined : new Set(keep);
  return boundedEntries(baggage, (key) => !isSessionNamespaceKey(key) && (allowed === undefined || allowed.has(key)));
}

/** An RFC 9110 token: what a W3C baggage key must be, sent as it is. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * One list member: the key as it is (keys are tokens, never percent-encoded), the value
 * percent-encoded, metadata raw. undefined for a key that is not a token, which no header
 * can carry.
 */
function serializeMember(key: string, entry: BaggageEntry): string | undefined {
  if (!TOKEN.test(key)) return undefined;
  const member = `${key}=${encodeURIComponent(entry.value)}`;
  return entry.metadata === undefined ? member : `${member};${entry.metadata.toString()}`;
}
