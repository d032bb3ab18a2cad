import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { context, trace, type Span } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { Agent } from 'undici';
import { answerFailure, networkFailure } from '../errors.js';
import { safeUrl } from '../text/redact-secrets.js';

export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** Names the destination in error messages, without secrets. */
  readonly what: string;
}

/** undici's codes for a request that got no answer in time. */
const UNDICI_TIMEOUTS: ReadonlySet<unknown> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** An error answer's body is read this far for the message; the rest is not waited for. */
const DETAIL_CHARS = 300;
/** Four bytes a character at most: enough bytes for DETAIL_CHARS. */
const DETAIL_BYTES = DETAIL_CHARS * 4;

/**
 * POSTs `body` over a keep-alive connection and resolves when the far end answered 2xx;
 * otherwise throws a DeliveryError: network failures, 5xx and 429 are worth retrying
 * (honouring Retry-After), other 4xx are final. undici's pool, not node:http or fetch: it
 * took less CPU per request than node:http's client side by side on loopback.
 *
 * The active span (gateway.deliver) is the client span of the request: it gets the HTTP
 * attributes, and the undici instrumentation is suppressed for this one call, which would
 * only add a second span for the same request. The caller injects traceparent and baggage
 * into `headers` before, from the unsuppressed context. undici unrefs idle keep-alive
 * sockets, so they never hold the process open.
 */
export class HttpPoster {
  private readonly dispatcher = new Agent({ connections: 256 });

  post(url: URL, body: string, options: PostOptions): Promise<void> {
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'http.request.method': 'POST', 'url.full': safeUrl(url), 'server.address': url.hostname });
    return context.with(suppressTracing(context.active()), () => this.send(url, body, options, span));
  }

  private async send(url: URL, body: string, options: PostOptions, span: Span | undefined): Promise<void> {
    const { signal, what } = options;
    try {
      signal.throwIfAborted();
      const answer = await this.dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: options.headers,
        body,
        // No answer, or a body stalled, for this long: undici's own timers, as an
        // AbortSignal.timeout joined to the shutdown signal cost more a request.
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        signal: abortEmitter(signal),
      });
      span?.setAttribute('http.response.status_code', answer.statusCode);
      if (answer.statusCode < 300) {
        // Read to its end, so the connection can be reused.
        await finished(answer.body.resume());
        return;
      }
      const retryAfter = answer.headers['retry-after'];
      const detail = await startOf(answer.body);
      throw answerFailure(answer.statusCode, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, detail, what);
    } catch (error) {
      // The emitter aborts without a reason of its own: the shutdown signal holds it.
      if (signal.aborted) throw networkFailure(signal.reason, what);
      if (UNDICI_TIMEOUTS.has((error as { code?: unknown } | null)?.code)) {
        throw networkFailure(new Error(`no answer within ${options.timeoutMs} ms`, { cause: error }), what);
      }
      throw networkFailure(error, what);
    }
  }
}

/**
 * The start of an error answer's body, as text. A longer (or endless) body is not waited
 * for: leaving the loop destroys it, and undici drops the connection.
 */
async function startOf(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    bytes += chunk.length;
    if (bytes >= DETAIL_BYTES) break;
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, DETAIL_CHARS);
}

/**
 * undici takes an EventEmitter as a request's signal: one for each abort signal (the
 * gateway's shutdown) serves every post in flight under it, so the signal gets one listener
 * instead of one added and removed a post, and no AbortSignal is made a post.
 */
const emitters = new WeakMap<AbortSignal, EventEmitter>();

function abortEmitter(signal: AbortSignal): EventEmitter {
  let emitter = emitters.get(signal);
  if (emitter === undefined) {
    const posts = new EventEmitter();
    posts.setMaxListeners(0); // one listener a post in flight, by design
    signal.addEventListener('abort', () => posts.emit('abort'), { once: true });
    emitters.set(signal, posts);
    emitter = posts;
  }
  return emitter;
}
