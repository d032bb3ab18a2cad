import { MAX_FIELD_LENGTH } from '../session/index.js';

const UNSAFE = /[\p{Cc}\u2028\u2029\p{Cs}]/gu;

/**
 * A platform's display name made fit for a session: unsafe characters removed, cut to the
 * field limit, undefined when nothing is left. Names only label a chat; refusing a whole
 * message over an odd character in someone's name would lose it. Ids are never cleaned
 * like this: a changed id is a different chat.
 */
export function displayName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let cleaned = '';
  // By code point, so a cut never leaves half a surrogate pair.
  for (const character of value.replace(UNSAFE, '')) {
    if (cleaned.length + character.length > MAX_FIELD_LENGTH) break;
    cleaned += character;
  }
  cleaned = cleaned.trim();
  return cleaned === '' ? undefined : cleaned;
}
