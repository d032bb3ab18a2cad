import http from 'node:http';
import https from 'node:https';
import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { DeliveryError } from '../errors.js';

export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** Names the destination in error messages, without secrets. */
  readonly what: string;
}

/**
 * POSTs `body` over a keep-alive connection and resolves when the far end answered 2xx;
 * otherwise throws a DeliveryError: network failures, 5xx and 429 are worth retrying
 * (honouring Retry-After), other 4xx are final. node:http with a keep-alive agent, not
 * fetch: on the delivery path it costs a fraction of fetch per request (bench:gateway).
 * Idle keep-alive sockets are unref'd by node:http, so they never hold the process open.
 *
 * The active span (gateway.deliver) is the client span of the request: it gets the HTTP
 * attributes, and the http instrumentation is suppressed for this one call, which would
 * only add a second span for the same request at a measurable cost per message. The caller
 * injects traceparent and baggage into `headers` before, from the unsuppressed context.
 */
export class HttpPoster {
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 256 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 256 }),
  };

  post(url: URL, body: string, options: PostOptions): Promise<void> {
    const secure = url.protocol === 'https:';
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'http.request.method': 'POST', 'url.full': `${url.origin}${url.pathname}`, 'server.address': url.hostname });
    const send = () => new Promise<void>((resolve, reject) => {
      const request = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent: this.agents[secure ? 'https:' : 'http:'],
          headers: { ...options.headers, 'content-length': Buffer.byteLength(body) },
          timeout: options.timeoutMs,
          signal: options.signal,
        },
        (response) => {
          // A response cut off after its headers emits 'error' (ECONNRESET) and never 'end'.
          response.once('error', (error) => reject(networkFailure(error, options.what)));
          const status = response.statusCode ?? 0;
          span?.setAttribute('http.response.status_code', status);
          if (status >= 200 && status < 300) {
            response.resume();
            response.once('end', resolve);
            return;
          }
          let detail = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            if (detail.length < 300) detail += chunk;
          });
          response.once('end', () => reject(answerError(status, response.headers['retry-after'], detail.slice(0, 300), options.what)));
        },
      );
      request.once('timeout', () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
      request.once('error', (error) => reject(networkFailure(error, options.what)));
      request.end(body);
    });
    return context.with(suppressTracing(context.active()), send);
  }
}

function answerError(status: number, retryAfter: string | undefined, detail: string, what: string): DeliveryError {
  return new DeliveryError(`${what} answered ${status}${detail ? `: ${detail}` : ''}`, {
    retryable: status >= 500 || status === 429,
    retryAfterMs: retryAfterMs(retryAfter ?? null),
  });
}

/** A request that failed before any answer (refused, reset, timed out) is worth retrying. */
export function networkFailure(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new DeliveryError(`${what} could not be reached: ${reason}`, { retryable: true, cause: error });
}

/** Retry-After as seconds or an HTTP date (RFC 9110 section 10.2.3), in milliseconds. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
