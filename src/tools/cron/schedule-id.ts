import { randomInt } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 5;

/** A short id a user can type: `c` and 5 base-36 characters (60 million of them). */
export function newScheduleId(): string {
  let id = 'c';
  for (let i = 0; i < RANDOM_CHARS; i++) id += ALPHABET[randomInt(ALPHABET.length)];
  return id;
}

/** What a schedule id looks like, for checking one a user typed before asking the store. */
export const SCHEDULE_ID_PATTERN = '^c[0-9a-z]{5}$';
