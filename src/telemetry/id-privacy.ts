import { LRUCache } from 'lru-cache';
import { pseudonymize, type checkAttributeOptions } from './session-attributes.js';

type CheckedOptions = ReturnType<typeof checkAttributeOptions>;

/** How one id reads under a privacy setting: itself, its pseudonym, or nothing (undefined). */
export type IdPrivacy = (value: string) => string | undefined;

/** Pseudonyms remembered, so a busy chat costs a map lookup instead of an HMAC each time. */
const CACHE_SIZE = 1_000;

/**
 * The one mapping of chat, thread, session and user ids that spans and logs share: `plain`
 * keeps the id, `hmac` gives `pseudonymize(id, key)` (what chat.id carries, so one value finds
 * a chat across spans and log lines), `off` gives nothing.
 */
export function idPrivacy(options: CheckedOptions): IdPrivacy {
  if (options.privacy === 'plain') return (value) => value;
  if (options.privacy === 'off') return () => undefined;
  return cachedPseudonyms(options.hmacKey!);
}

function cachedPseudonyms(key: string): (value: string) => string {
  const cache = new LRUCache<string, string>({ max: CACHE_SIZE });
  return (value) => {
    let pseudonym = cache.get(value);
    if (pseudonym === undefined) cache.set(value, (pseudonym = pseudonymize(value, key)));
    return pseudonym;
  };
}

/**
 * `platform:chat[:thread]` as formatDestination writes it (parts percent-encoded), with its
 * ids mapped: `platform:pseudonym[:pseudonym]` in hmac (pseudonyms need no encoding), the
 * platform alone in off. Each id is decoded first, so its pseudonym is the one chat.id has.
 */
export function privateDestination(text: string, id: IdPrivacy): string {
  const [platform, ...ids] = text.split(':');
  const mapped = ids.map((part) => id(decoded(part)));
  return [platform, ...mapped.filter((part) => part !== undefined)].join(':');
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
