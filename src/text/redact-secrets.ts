/**
 * Secrets out of URLs and free text, for spans, logs and the start banner alike: a URL keeps
 * its origin and path only (no user:password@, no query, no fragment), a Telegram bot
 * token in a path (`/bot<id>:<secret>/sendMessage`) becomes `/bot<redacted>`, and a Discord
 * interaction's or webhook's token in a path (`/interactions/<id>/<token>/callback`) `<redacted>`.
 */

/** grammY, like every Bot API client, puts the whole token in the path. */
const BOT_TOKEN_IN_PATH = /\/bot\d+(?::|%3A)[^/?#\s]*/gi;
/** Discord's interaction and webhook routes hold their token after the id (`/interactions/<id>/<token>/callback`). */
const ROUTE_TOKEN_IN_PATH = /\/(interactions|webhooks)\/(\d+)\/[^/?#\s]+/gi;
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
/** Credentials recognisable by their shape wherever they appear in text. */
const SHAPED_SECRETS: readonly [RegExp, string][] = [
  [/\bxox[a-z]-[\w-]+/gi, 'xox-<redacted>'], // Slack tokens
  [/\b\d{5,}:[\w-]{30,}/g, '<redacted>'], // a Telegram bot token outside a URL
  [/\b[\w-]{23,28}\.[\w-]{6,7}\.[\w-]{27,40}\b/g, '<redacted>'], // a Discord bot token: id, time and HMAC, base64url
  [/\b(Bearer|Basic)\s+[\w.~+/=-]+/gi, '$1 <redacted>'],
];
/** Cheap pre-check: text without these characters has nothing to redact in a URL. */
const MAYBE_SECRET_IN_URL = /[@?#]|\/bot\d|\/(interactions|webhooks)\//i;

/** The path alone, token segments redacted: for url.path, http.target and logged request URLs. */
export function safePath(path: string): string {
  const end = path.search(/[?#]/);
  return (end < 0 ? path : path.slice(0, end)).replace(BOT_TOKEN_IN_PATH, '/bot<redacted>').replace(ROUTE_TOKEN_IN_PATH, '/$1/$2/<redacted>');
}

/** Origin and path of an absolute URL, token segments redacted; text that is not a URL is redacted as text. */
export function safeUrl(value: string | URL): string {
  if (typeof value === 'string' && !MAYBE_SECRET_IN_URL.test(value)) return value;
  let url: URL;
  try {
    url = typeof value === 'string' ? new URL(value) : value;
  } catch {
    return redactText(value as string);
  }
  const origin = url.origin === 'null' ? `${url.protocol}//${url.host}` : url.origin;
  return `${origin}${safePath(url.pathname)}`;
}

/** Free text (an error message, a stack) with every URL made safe and shaped credentials redacted. */
export function redactText(text: string): string {
  let safe = text.replace(URL_IN_TEXT, (url) => safeUrl(url)).replace(BOT_TOKEN_IN_PATH, '/bot<redacted>').replace(ROUTE_TOKEN_IN_PATH, '/$1/$2/<redacted>');
  for (const [pattern, replacement] of SHAPED_SECRETS) safe = safe.replace(pattern, replacement);
  return safe;
}
