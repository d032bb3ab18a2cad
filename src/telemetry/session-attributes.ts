import { createHmac } from 'node:crypto';
import type { AttributeValue } from '@opentelemetry/api';
import { ConfigError } from '../errors.js';
import { names, type Session } from '../session/index.js';

/**
 * How chat and user identity appear on spans. `plain`: as is (default). `hmac`: keyed
 * pseudonyms, stable for a key, so one chat or user stays searchable without its id being
 * readable. `off`: only platform and chat type. Silence is a choice, not the default:
 * without ids nobody can find a misrouted conversation
 * (pitfall: Conversations missing from traces).
 */
export type PrivacyMode = 'plain' | 'hmac' | 'off';

export interface SessionAttributeOptions {
  readonly privacy?: PrivacyMode;
  /** Required for `hmac`: at least 16 bytes, kept secret, stable across restarts. */
  readonly hmacKey?: string;
  /** Also stamp chat.name; only in `plain` mode. */
  readonly includeChatName?: boolean;
}

/** Attributes as a flat [key, value, key, value, …] list: the cheapest shape to apply per span. */
export type AttributePairs = readonly (string | AttributeValue)[];

const MIN_HMAC_KEY_BYTES = 16;
const PRIVACY_MODES: readonly PrivacyMode[] = ['plain', 'hmac', 'off'];

/** Keyed pseudonym of an id: what `hmac` mode stamps, and what to search for in Jaeger. */
export function pseudonymize(value: string, key: string): string {
  return 'h_' + createHmac('sha256', key).update(value).digest('base64url').slice(0, 22);
}

/** Checks options once, at start-up, so stamping never has to. */
export function checkAttributeOptions(options: SessionAttributeOptions): Required<Omit<SessionAttributeOptions, 'hmacKey'>> & { hmacKey?: string } {
  const privacy = options.privacy ?? 'plain';
  // An unknown mode (a JS caller's 'HMAC') would otherwise stamp plain ids.
  if (!PRIVACY_MODES.includes(privacy)) {
    throw new ConfigError('THREADLINE_SPAN_PRIVACY', `"${String(privacy)}" is not one of ${PRIVACY_MODES.join(', ')}`);
  }
  if (privacy === 'hmac' && (options.hmacKey === undefined || Buffer.byteLength(options.hmacKey) < MIN_HMAC_KEY_BYTES)) {
    throw new ConfigError('THREADLINE_SPAN_HMAC_KEY', `hmac privacy needs a secret key of at least ${MIN_HMAC_KEY_BYTES} bytes`);
  }
  const includeChatName = options.includeChatName ?? false;
  if (includeChatName && privacy !== 'plain') {
    throw new ConfigError('THREADLINE_SPAN_CHAT_NAME', `chat names can only be stamped in plain privacy mode, not ${privacy}`);
  }
  return { privacy, includeChatName, ...(options.hmacKey === undefined ? {} : { hmacKey: options.hmacKey }) };
}

/** The span attributes for a session under the given (checked) options. */
export function sessionAttributePairs(session: Session, options: ReturnType<typeof checkAttributeOptions>): AttributePairs {
  const pairs: (string | AttributeValue)[] = [names.CHAT_PLATFORM, session.platform, names.CHAT_TYPE, session.chatType];
  if (options.privacy === 'off') return pairs;
  const key = options.hmacKey;
  const id = key === undefined || options.privacy !== 'hmac' ? (v: string) => v : (v: string) => pseudonymize(v, key);
  pairs.push(names.CHAT_ID, id(session.chatId));
  if (session.threadId !== undefined) pairs.push(names.CHAT_THREAD_ID, id(session.threadId));
  // user.id is what trace tools' "users" views group by; the same mapping keeps it as private as chat.id.
  if (session.userId !== undefined) pairs.push(names.USER_ID, id(session.userId));
  const sessionId = id(session.sessionId);
  pairs.push(names.SESSION_ID, sessionId, names.GEN_AI_CONVERSATION_ID, sessionId);
  if (options.includeChatName && session.chatName !== undefined) pairs.push(names.CHAT_NAME, session.chatName);
  return pairs;
}
