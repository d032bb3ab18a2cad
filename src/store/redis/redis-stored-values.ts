import { parseDestination, type Destination } from '../../session/delivery.js';
import type { RoutingSnapshot } from '../../session/index.js';

/** A stored snapshot, or undefined when it is not a JSON object: a forensic read reports what it can of a damaged record. */
export function parseRouting(json: string | undefined): RoutingSnapshot | undefined {
  if (json === undefined) return undefined;
  try {
    const snapshot: unknown = JSON.parse(json);
    return typeof snapshot === 'object' && snapshot !== null ? (snapshot as RoutingSnapshot) : undefined;
  } catch {
    return undefined;
  }
}

/** A stored destination, or undefined when it does not parse (see parseRouting). */
export function parseStoredDestination(text: string | undefined): Destination | undefined {
  if (text === undefined) return undefined;
  try {
    return parseDestination(text);
  } catch {
    return undefined;
  }
}

/** A number field as stored, or undefined when it is unset (NULL). */
export function optionalNumber(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value);
}

/**
 * The gateway's own read of a snapshot: one that does not parse throws, as SQLite's read does,
 * so a damaged record fails its caller loudly instead of running in no chat.
 */
export function requireRouting(json: string | undefined): RoutingSnapshot {
  return JSON.parse(json ?? '') as RoutingSnapshot;
}
