import type { AttributeValue, Attributes, Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { idPrivacy, privateDestination, type IdPrivacy } from './id-privacy.js';
import { redactText, safePath, safeUrl } from '../text/redact-secrets.js';
import { checkAttributeOptions, type SessionAttributeOptions } from './session-attributes.js';

/** What replaces a value that cannot be shown at all, as OpenTelemetry's semantic conventions spell it. */
const REDACTED = 'REDACTED';
const URL_KEYS = ['url.full', 'http.url', 'url.original'];
const PATH_KEYS = ['url.path', 'http.target'];
/** Captured headers that carry credentials (only captured if an instrumentation is told to). */
const SECRET_HEADER = /^http\.(request|response)\.header\.(authorization|proxy-authorization|cookie|set-cookie|x-telegram-bot-api-secret-token|x-slack-signature|.*(token|secret|api-key|apikey).*)$/;
/** Free-text attributes of an `exception` event (recordException): the status message's text, and its stack. */
const EXCEPTION_TEXT_KEYS = ['exception.message', 'exception.stacktrace'];
/**
 * Ids the delivery code sets by hand, beside the stamped chat.id: on gateway.deliver
 * (routing.destination.*) and on its routing.mismatch event (routing.origin.* too).
 */
const ROUTING_ID_KEYS = [
  'routing.destination.chat.id',
  'routing.destination.chat.thread.id',
  'routing.origin.chat.id',
  'routing.origin.chat.thread.id',
];
/** formatDestination's `platform:chat[:thread]`, on gateway.deliver. */
const DESTINATION_KEY = 'delivery.destination';
/** Ids a REST API puts in its paths (Discord's channel and message snowflakes): under the span privacy, like chat.id. */
const PATH_ID = /\/(\d{15,20})(?=[/?#]|$)/g;

/**
 * Takes secrets out of every span before any exporter sees it: URLs keep origin and path
 * (no user:password@, no query; Telegram's `/bot<token>/` becomes `/bot<redacted>/`),
 * url.query and credential headers become REDACTED, and the status message and the text of
 * exception events are redacted as text. Here rather than in each instrumentation's hooks so
 * that every client (http, undici, one added later) and attributes set by hand after the
 * start are covered.
 *
 * It also gives the ids set by hand (routing.*.chat.id, routing.*.chat.thread.id,
 * delivery.destination, on the span and on its routing.mismatch event), and the long numeric
 * ids in URL paths (Discord's REST API names channels there), the span privacy
 * the SessionSpanProcessor stamps chat.id with: in `hmac` the same pseudonyms (so one
 * Jaeger search finds a chat's message and delivery spans), in `off` no id at all
 * (delivery.destination keeps its platform). In `plain` they are left as set.
 */
export class RedactSpanProcessor implements SpanProcessor {
  /** How an id reads; undefined in `plain`, where ids are not touched. */
  private readonly id: IdPrivacy | undefined;
  /** hmac keeps an empty thread id (the mismatch event's "no thread") empty; off drops it too. */
  private readonly keepEmpty: boolean;

  /** `privacy`: the span privacy setting (TelemetryConfig.attributes), checked here as by the SessionSpanProcessor. */
  constructor(privacy: SessionAttributeOptions = {}) {
    const options = checkAttributeOptions(privacy);
    this.id = options.privacy === 'plain' ? undefined : idPrivacy(options);
    this.keepEmpty = options.privacy === 'hmac';
  }

  onStart(_span: Span, _parentContext: Context): void {}

  /**
   * Runs while the span can still be written, after every attribute and event was added and
   * before any exporter's onEnd. Events have no setter: each is the span's own object (addEvent
   * copies the caller's attributes), so one that needs a change is replaced in span.events.
   */
  onEnding(span: Span): void {
    const attributes = span.attributes;
    const id = this.id;
    for (const key in attributes) {
      const value = attributes[key];
      let safe = safeValue(key, value);
      if (id !== undefined && typeof safe === 'string' && (URL_KEYS.includes(key) || PATH_KEYS.includes(key))) safe = this.privatePath(safe);
      if (safe !== value && safe !== undefined) span.setAttribute(key, safe);
      // Off `plain` only; a first-character test keeps most keys (chat.*, session.*) at one comparison.
      else if (id !== undefined && value !== undefined && maybeIdKey(key)) this.privateId(span, key, value, id);
    }
    const message = span.status.message;
    if (message !== undefined && message !== '') {
      const safe = redactText(message);
      if (safe !== message) span.setStatus({ code: span.status.code, message: safe });
    }
    const events = span.events;
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      const safe = this.safeEvent(event);
      if (safe !== event) events[i] = safe;
    }
  }

  onEnd(_span: ReadableSpan): void {}

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }

  /** An id attribute (or delivery.destination) as the privacy setting shows it; removed when it shows none. */
  private privateId(span: Span, key: string, value: AttributeValue, id: IdPrivacy): void {
    if (key === DESTINATION_KEY) {
      if (typeof value === 'string') span.setAttribute(key, privateDestination(value, id));
      return;
    }
    if (!ROUTING_ID_KEYS.includes(key)) return;
    const hidden = this.hide(value);
    // No setter removes an attribute; until onEnd the span is still writable, and its own.
    if (hidden === undefined) delete (span.attributes as Record<string, unknown>)[key];
    else if (hidden !== value) span.setAttribute(key, hidden);
  }

  /** A URL or path with the ids in its path as the privacy setting shows them: pseudonyms in `hmac`, `:id` in `off`. */
  private privatePath(url: string): string {
    if (!/\d{15}/.test(url)) return url;
    return url.replace(PATH_ID, (_segment, digits: string) => `/${this.hide(digits) ?? ':id'}`);
  }

  /** The event itself when nothing in it changes (the usual case), else a copy with safe attributes. */
  private safeEvent(event: TimedEvent): TimedEvent {
    const attributes = event.attributes;
    if (attributes === undefined) return event;
    let safe: Record<string, AttributeValue | undefined> | undefined;
    if (event.name === 'exception') {
      for (const key of EXCEPTION_TEXT_KEYS) {
        const value = attributes[key];
        if (typeof value !== 'string') continue;
        const redacted = redactText(value);
        if (redacted !== value) (safe ??= { ...attributes })[key] = redacted;
      }
    }
    if (this.id !== undefined) {
      for (const key of ROUTING_ID_KEYS) {
        const value = attributes[key];
        if (value === undefined) continue;
        const hidden = this.hide(value);
        if (hidden === value) continue;
        safe ??= { ...attributes };
        if (hidden === undefined) delete safe[key];
        else safe[key] = hidden;
      }
    }
    return safe === undefined ? event : { ...event, attributes: safe as Attributes };
  }

  /** An id attribute's value under the privacy setting; undefined: leave the attribute out. */
  private hide(value: AttributeValue): string | undefined {
    const text = typeof value === 'string' ? value : String(value);
    if (text === '' && this.keepEmpty) return text;
    return this.id!(text);
  }
}

/** Whether `key` may be one of ROUTING_ID_KEYS or DESTINATION_KEY: 'r'outing.* or 'd'elivery.*. */
function maybeIdKey(key: string): boolean {
  const first = key.charCodeAt(0);
  return first === 114 || first === 100;
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
