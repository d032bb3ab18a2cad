import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { finished } from 'node:stream/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { DeliveryError, messageOf } from '../errors.js';

export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** Names the destination in error messages, without secrets. */
  readonly what: string;
}

/** undici's codes for a request that got no answer in time. */
const UNDICI_TIMEOUTS: ReadonlySet<unknown> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** An error answer's body is read this far for the message, the rest discarded. */
const DETAIL_CHARS = 300;

/**
 * POSTs `body` over a keep-alive connection and resolves when the far end answered 2xx;
 * otherwise throws a DeliveryError: network failures, 5xx and 429 are worth retrying
 * (honouring Retry-After), other 4xx are final. undici's pool, not node:http or fetch: side
 * by side on loopback it took about a third less CPU per request than node:http's client.
 *
 * The active span (gateway.deliver) is the client span of the request: it gets the HTTP
 * attributes, and the undici instrumentation is suppressed for this one call, which would
 * only add a second span for the same request at a measurable cost per message. The caller
 * injects traceparent and baggage into `headers` before, from the unsuppressed context.
 * undici unrefs idle keep-alive sockets, so they never hold the process open.
 */
export class HttpPoster {
  private readonly dispatcher = new Agent({ connections: 256 });

  post(url: URL, body: string, options: PostOptions): Promise<void> {
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'http.request.method': 'POST', 'url.full': `${url.origin}${url.pathname}`, 'server.address': url.hostname });
    return context.with(suppressTracing(context.active()), async () => {
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method: 'POST',
          dispatcher: this.dispatcher,
          headers: options.headers,
          body,
          signal: options.signal,
          // No answer, or a body stalled, for this long. undici's own timers, not an
          // AbortSignal.timeout per request: combining signals cost about 20 µs a request
          // on Node 20, and its timers tick about once a second, which is fine at seconds.
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
        });
        const status = response.statusCode;
        span?.setAttribute('http.response.status_code', status);
        if (status >= 200 && status < 300) return await drain(response.body);
        const detail = await leadingText(response.body);
        throw answerError(status, response.headers['retry-after'], detail, options.what);
      } catch (error) {
        // A response cut off after its headers fails the body read: a network failure too.
        const timedOut = UNDICI_TIMEOUTS.has((error as { code?: unknown } | null)?.code);
        throw networkFailure(timedOut ? new Error(`no answer within ${options.timeoutMs} ms`, { cause: error }) : error, options.what);
      }
    });
  }
}

/**
 * Reads a body to its end, however long; a body cut off (a reset after the headers) throws.
 * Not dump(): it stops at 128 KiB with an error, which would make a delivered message a retry.
 */
async function drain(body: Dispatcher.ResponseData['body']): Promise<void> {
  await finished(body.resume());
}

async function leadingText(body: Dispatcher.ResponseData['body']): Promise<string> {
  let text = '';
  body.setEncoding('utf8');
  for await (const chunk of body as AsyncIterable<string>) {
    text += chunk;
    if (text.length >= DETAIL_CHARS) break;
  }
  // Breaking out of the loop destroys the rest of the body, which is what we want.
  return text.slice(0, DETAIL_CHARS);
}

function answerError(status: number, retryAfter: string | string[] | undefined, detail: string, what: string): DeliveryError {
  return new DeliveryError(`${what} answered ${status}${detail ? `: ${detail}` : ''}`, {
    retryable: status >= 500 || status === 429,
    retryAfterMs: retryAfterMs(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter),
  });
}

/** A request that failed before any answer (refused, reset, timed out) is worth retrying. */
export function networkFailure(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const reason = messageOf(error);
  return new DeliveryError(`${what} could not be reached: ${reason}`, { retryable: true, cause: error });
}

/** Retry-After as seconds or an HTTP date (RFC 9110 section 10.2.3), in milliseconds. */
function retryAfterMs(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
