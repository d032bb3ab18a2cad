import type { AttributeValue, Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { redactText, safePath, safeUrl } from './redact-secrets.js';

/** What replaces a value that cannot be shown at all, as OpenTelemetry's semantic conventions spell it. */
const REDACTED = 'REDACTED';
const URL_KEYS = ['url.full', 'http.url', 'url.original'];
const PATH_KEYS = ['url.path', 'http.target'];
/** Captured headers that carry credentials (only captured if an instrumentation is told to). */
const SECRET_HEADER = /^http\.(request|response)\.header\.(authorization|proxy-authorization|cookie|set-cookie|x-telegram-bot-api-secret-token|x-slack-signature|.*(token|secret|api-key|apikey).*)$/;

/**
 * Takes secrets out of every span before any exporter sees it: URLs keep origin and path
 * (no user:password@, no query; Telegram's `/bot<token>/` becomes `/bot<redacted>/`),
 * url.query and credential headers become REDACTED, and the status message is redacted as
 * text. Here rather than in each instrumentation's hooks so that every client (http,
 * undici, one added later) and attributes set by hand after the start are covered.
 */
export class RedactSpanProcessor implements SpanProcessor {
  onStart(_span: Span, _parentContext: Context): void {}

  /** Runs while the span can still be written, after every attribute was set. */
  onEnding(span: Span): void {
    const attributes = span.attributes;
    for (const key in attributes) {
      const value = attributes[key];
      const safe = safeValue(key, value);
      if (safe !== value && safe !== undefined) span.setAttribute(key, safe);
    }
    const message = span.status.message;
    if (message !== undefined && message !== '') {
      const safe = redactText(message);
      if (safe !== message) span.setStatus({ code: span.status.code, message: safe });
    }
  }

  onEnd(_span: ReadableSpan): void {}

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function safeValue(key: string, value: AttributeValue | undefined): AttributeValue | undefined {
  // Most attributes (chat.*, session.*, delivery.*) leave here, at the cost of two comparisons.
  if (!key.startsWith('url.') && !key.startsWith('http.')) return value;
  if (typeof value !== 'string') return SECRET_HEADER.test(key) ? [REDACTED] : value;
  if (URL_KEYS.includes(key)) return safeUrl(value);
  if (PATH_KEYS.includes(key)) return safePath(value);
  if (key === 'url.query') return value === '' ? value : REDACTED;
  if (SECRET_HEADER.test(key)) return REDACTED;
  return value;
}
