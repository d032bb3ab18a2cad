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

/**
 * Keeps the entries `keep` accepts, within the W3C member and byte limits, in order.
 * Sizes are counted as they would be serialized (percent-encoded), so what is kept fits.
 */
export function boundedEntries(
  baggage: Baggage,
  keep: (key: string, entry: BaggageEntry) => boolean,
): { entries: Record<string, BaggageEntry>; dropped: number } {
  const entries: Record<string, BaggageEntry> = {};
  let members = 0;
  let bytes = 0;
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
    const size = serializedSize(key, entry) + (members === 0 ? 0 : 1);
    if (members >= MAX_BAGGAGE_MEMBERS || bytes + size > MAX_BAGGAGE_BYTES) {
      dropped++;
      continue;
    }
    entries[key] = entry;
    members++;
    bytes += size;
  }
  return { entries, dropped };
}

/**
 * Which foreign (non-threadline) inbound baggage to keep: false keeps none, true keeps all,
 * a list keeps those keys. threadline's own keys are always dropped.
 */
export type KeepBaggage = boolean | readonly string[];

/** Filters inbound baggage: never threadline's keys, foreign ones per `keep`, within the limits. */
export function filterInboundBaggage(baggage: Baggage, keep: KeepBaggage): { entries: Record<string, BaggageEntry>; dropped: number } {
  if (keep === false) return { entries: {}, dropped: baggage.getAllEntries().length };
  const allowed = keep === true ? undefined : new Set(keep);
  return boundedEntries(baggage, (key) => !isSessionNamespaceKey(key) && (allowed === undefined || allowed.has(key)));
}

function serializedSize(key: string, entry: BaggageEntry): number {
  const metadata = entry.metadata === undefined ? 0 : entry.metadata.toString().length + 1;
  return Buffer.byteLength(encodeURIComponent(key)) + 1 + Buffer.byteLength(encodeURIComponent(entry.value)) + metadata;
}
