import { names } from '../session/index.js';
import { idPrivacy, privateDestination } from './id-privacy.js';
import type { checkAttributeOptions } from './session-attributes.js';

type Serializer = (value: unknown) => unknown;
type CheckedOptions = ReturnType<typeof checkAttributeOptions>;

/** Ids under their dotted names (the session fields every record carries), and `chat` as the platforms log it. */
const ID_KEYS = [names.CHAT_ID, names.CHAT_THREAD_ID, names.USER_ID, names.SESSION_ID, names.GEN_AI_CONVERSATION_ID, 'chat'];
/** Keys of a routing-mismatch record (routing.origin.chat.id, …) that hold ids. */
const ROUTING_ID_KEY = /(^|\.)(chat\.id|chat\.thread\.id|user\.id)$/;

/**
 * Serializers that give log records the ids spans carry under the same privacy setting:
 * in `hmac` the same pseudonyms (so a log line and its span are found by one value), in
 * `off` none; `plain` needs none. They cover the session fields of every record and the
 * fields the gateway logs ids under: `chat`, `destination` (formatDestination's text) and
 * `routing` (a mismatch's routing.* attributes), so call sites need no change.
 */
export function privacySerializers(options: CheckedOptions): Record<string, Serializer> {
  if (options.privacy === 'plain') return {};
  const id = idPrivacy(options);
  const serializers: Record<string, Serializer> = {};
  for (const key of ID_KEYS) serializers[key] = (value) => (typeof value === 'string' ? id(value) : value);
  serializers['destination'] = (value) => (typeof value === 'string' ? privateDestination(value, id) : value);
  serializers['routing'] = (value) => (typeof value === 'object' && value !== null ? routing(value, id) : value);
  return serializers;
}

function routing(record: object, id: (value: string) => string | undefined): Record<string, unknown> {
  const mapped: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    mapped[key] = ROUTING_ID_KEY.test(key) && typeof value === 'string' && value !== '' ? id(value) : value;
  }
  return mapped;
}
