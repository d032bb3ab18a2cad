import { stdSerializers } from 'pino';
import { redactText, safePath, safeUrl } from '../text/redact-secrets.js';

/** Fields named like credentials, at the top of a record or one level down (headers, options). */
const SECRET_KEYS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-telegram-bot-api-secret-token',
  'x-slack-signature',
  'token',
  'botToken',
  'signingSecret',
  'webhookSecret',
  'hmacKey',
  'secret',
  'password',
];
export const SECRET_PATHS = SECRET_KEYS.flatMap((key) => [`["${key}"]`, `*["${key}"]`, `*.headers["${key}"]`]);

/** How deep nested errors (`cause` is already folded into message and stack by pino) are followed. */
const MAX_ERROR_DEPTH = 3;
const SECRET_KEY = new RegExp(`^(${SECRET_KEYS.join('|')})$`, 'i');

/**
 * Serializers that keep secrets out of log lines: the message and every error's text are
 * redacted as text, a logged `url` keeps origin and path only.
 */
export const secretSerializers = {
  msg: (message: unknown) => (typeof message === 'string' ? redactText(message) : message),
  url: (url: unknown) => (typeof url !== 'string' ? url : url.startsWith('/') ? safePath(url) : safeUrl(url)),
  err: (error: unknown) => safeError(stdSerializers.err(error as Error), 0),
};

/**
 * An error as its type, message, stack and scalar fields (code, status, retryable…), text
 * redacted, and its nested errors likewise. Object fields are left out: an HTTP client's
 * error carries its request config, Authorization header included (axios under
 * @slack/web-api), and grammY's carries the whole payload.
 */
function safeError(serialized: unknown, depth: number): unknown {
  if (typeof serialized !== 'object' || serialized === null) return typeof serialized === 'string' ? redactText(serialized) : serialized;
  const safe: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(serialized)) {
    if (SECRET_KEY.test(key)) safe[key] = '[redacted]';
    else if (typeof value === 'string') safe[key] = redactText(value);
    else if (typeof value === 'number' || typeof value === 'boolean') safe[key] = value;
    else if (depth < MAX_ERROR_DEPTH && isSerializedError(value)) safe[key] = safeError(value, depth + 1);
    else if (depth < MAX_ERROR_DEPTH && Array.isArray(value) && value.every(isSerializedError)) {
      safe[key] = value.map((error) => safeError(error, depth + 1)); // AggregateError's errors
    }
  }
  return safe;
}

function isSerializedError(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string' && 'stack' in value;
}
