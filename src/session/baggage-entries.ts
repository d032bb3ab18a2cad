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

/** Baggage kept within the limits: its entries, and the same as a W3C `baggage` header value. */
export interface BoundedBaggage {
  readonly entries: Record<string, BaggageEntry>;
  /**
   * The entries as a `baggage` header, each member written as the W3C propagator writes it;
   * '' when there are none. Unlike that propagator, a member over 4096 bytes is not dropped:
   * the W3C limits are 64 members and 8192 bytes, and threadline's own members are far
   * smaller (ids of at most 256 characters).
   */
  readonly header: string;
  readonly dropped: number;
}

/**
 * Keeps the entries `keep` accepts, within the W3C limits, in order. Each entry is
 * serialized once (percent-encoded) to count its size, and that text is the header, so
 * what is kept fits and an outbound call needs no second pass.
 */
export function boundedEntries(baggage: Baggage, keep: (key: string, entry: BaggageEntry) => boolean): BoundedBaggage {
  const entries: Record<string, BaggageEntry> = {};
  let header = '';
  let members = 0;
  let dropped = 0;
  // threadline's own entries first, so foreign ones can never crowd them out of the limits.
  const own: [string, BaggageEntry][] = [];
  const foreign: [string, BaggageEntry][] = [];
  for (const pair of baggage.getAllEntries()) (isSessionNamespaceKey(pair[0]) ? own : foreign).push(pair);
  for (const [key, entry] of own.concat(foreign)) {
    if (!keep(key, entry)) {
      dropped++;
      continue;
    }
    const member = serializeMember(key, entry);
    const size = member.length + (members === 0 ? 0 : 1);
    if (members >= MAX_BAGGAGE_MEMBERS || header.length + size > MAX_BAGGAGE_BYTES) {
      dropped++;
      continue;
    }
    entries[key] = entry;
    header += members === 0 ? member : `,${member}`;
    members++;
  }
  return { entries, header, dropped };
}

/**
 * Which foreign (non-threadline) inbound baggage to keep: false keeps none, true keeps all,
 * a list keeps those keys. threadline's own keys are always dropped.
 */
export type KeepBaggage = boolean | readonly string[];

/** Filters inbound baggage: never threadline's keys, foreign ones per `keep`, within the limits. */
export function filterInboundBaggage(baggage: Baggage, keep: KeepBaggage): BoundedBaggage {
  if (keep === false) return { entries: {}, header: '', dropped: baggage.getAllEntries().length };
  const allowed = keep === true ? undefined : new Set(keep);
  return boundedEntries(baggage, (key) => !isSessionNamespaceKey(key) && (allowed === undefined || allowed.has(key)));
}

/** One list member as the W3C propagator writes it: percent-encoded key and value, raw metadata. */
function serializeMember(key: string, entry: BaggageEntry): string {
  const member = `${encodeURIComponent(key)}=${encodeURIComponent(entry.value)}`;
  return entry.metadata === undefined ? member : `${member};${entry.metadata.toString()}`;
}
