import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

/**
 * Random bytes for ids, drawn 4 KiB at a time: uuid draws 16 bytes per id from the
 * system, and that one call cost more than the rest of an id (4 µs an id against 0.75 µs
 * from the pool, side by side).
 */
const pool = new Uint8Array(4096);
let used = pool.length;
/** uuid's own v7 state (RFC 9562 method 1), kept here because we pass the bytes ourselves. */
let lastMs = Number.NEGATIVE_INFINITY;
let sequence = 0;

/**
 * A UUIDv7 for a message: time-ordered, and increasing within a millisecond, so the store's
 * keys grow at one end of their B-trees and a commit dirties a few pages instead of one
 * random page per message.
 */
export function timeOrderedId(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const random = pool.subarray(used, (used += 16));
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    sequence = (sequence + 1) | 0;
    if (sequence === 0) lastMs++;
  }
  return v7({ random, msecs: lastMs, seq: sequence });
}
