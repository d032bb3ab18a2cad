import { createHash } from 'node:crypto';

/**
 * The partition of `key` among `count`: stable across instances and restarts, so every
 * message of a session (or delivery of a chat) goes to one queue and keeps its order.
 */
export function partitionOf(key: string, count: number): number {
  return createHash('sha1').update(key).digest().readUInt32BE(0) % count;
}
