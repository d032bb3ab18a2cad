import { v7 } from 'uuid';

/**
 * A UUIDv7 for a message: time-ordered, and increasing within a millisecond (uuid keeps a
 * counter there, RFC 9562 method 1), so the store's keys grow at one end of their B-trees
 * and a commit dirties a few pages instead of one random page per message.
 */
export function timeOrderedId(): string {
  return v7();
}
