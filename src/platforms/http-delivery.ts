import { context, trace, type Span } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { Agent, type Dispatcher } from 'undici';
import { answerFailure, networkFailure, type DeliveryError } from '../errors.js';
import { safeUrl } from '../telemetry/redact-secrets.js';

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

/**
 * POSTs `body` over a keep-alive connection and resolves when the far end answered 2xx;
 * otherwise throws a DeliveryError: network failures, 5xx and 429 are worth retrying
 * (honouring Retry-After), other 4xx are final. undici's pool, not node:http or fetch, for
 * its CPU per request. Its dispatcher is driven with a handler of our own rather than through
 * `request()`, which wraps every answer in a stream, an AsyncResource and a promise that a
 * delivery never needs; bench:gateway measured the difference (docs/decisions.md).
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
    span?.setAttributes({ 'http.request.method': 'POST', 'url.full': safeUrl(url), 'server.address': url.hostname });
    return context.with(suppressTracing(context.active()), () => {
      const answer = new PostAnswer(options, span);
      // dispatch() hands its own failures (a closed pool, bad options) to answer.onError.
      if (options.signal.aborted) answer.onError(options.signal.reason as Error);
      else {
        this.dispatcher.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers: options.headers,
            body,
            // No answer, or a body stalled, for this long. undici's own timers, not an
            // AbortSignal.timeout combined with the shutdown signal per request, which costs
            // more; its timers tick about once a second, which is fine at seconds.
            headersTimeout: options.timeoutMs,
            bodyTimeout: options.timeoutMs,
          },
          answer,
        );
      }
      return answer.settled;
    });
  }
}

/**
 * The posts in flight under each abort signal. One listener a signal (the gateway's
 * shutdown) aborts them all, instead of one listener added and removed a post.
 */
const postsBySignal = new WeakMap<AbortSignal, Set<PostAnswer>>();

function abortOnSignal(signal: AbortSignal, answer: PostAnswer): void {
  let posts = postsBySignal.get(signal);
  if (posts === undefined) {
    const inFlight = new Set<PostAnswer>();
    posts = inFlight;
    postsBySignal.set(signal, inFlight);
    signal.addEventListener('abort', () => inFlight.forEach((post) => post.abort(signal.reason)), { once: true });
  }
  posts.add(answer);
}

/**
 * undici's callbacks for one post: keeps the status, an error answer's Retry-After and the
 * start of its body, and settles `settled` once: when the answer is complete, when an error
 * answer has given enough detail (the rest is not waited for), or when the request failed.
 * A 2xx body is read to its end and dropped, so the connection can be reused.
 */
class PostAnswer implements Dispatcher.DispatchHandlers {
  readonly settled: Promise<void>;
  private resolve!: () => void;
  private reject!: (error: DeliveryError) => void;
  private done = false;
  private status = 0;
  private retryAfter: string | undefined;
  private readonly detail: Buffer[] = [];
  private detailBytes = 0;
  private abortRequest: ((error?: Error) => void) | undefined;

  constructor(
    private readonly options: PostOptions,
    private readonly span: Span | undefined,
  ) {
    this.settled = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  abort(reason: unknown): void {
    this.abortRequest?.(reason as Error);
  }

  /** Called once a connection is free for the post, which may be after the signal aborted. */
  onConnect(abort: (error?: Error) => void): void {
    if (this.abortRequest === undefined) abortOnSignal(this.options.signal, this);
    this.abortRequest = abort;
    if (this.options.signal.aborted) abort(this.options.signal.reason as Error);
  }

  onHeaders(status: number, headers: Buffer[]): boolean {
    if (status < 200) return true; // 1xx: the answer is still to come
    this.status = status;
    this.span?.setAttribute('http.response.status_code', status);
    if (status >= 300) {
      for (let i = 0; i < headers.length && this.retryAfter === undefined; i += 2) {
        if (headers[i]!.toString('latin1').toLowerCase() === 'retry-after') this.retryAfter = headers[i + 1]!.toString('latin1');
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.status < 300) return true;
    this.detail.push(chunk);
    this.detailBytes += chunk.length;
    // Four bytes a character at most: enough for DETAIL_CHARS. A longer (or endless) error
    // body is not waited for; the connection is dropped instead.
    if (this.detailBytes >= DETAIL_CHARS * 4) {
      this.failWithAnswer();
      this.abortRequest?.(new Error('error answer read far enough'));
    }
    return true;
  }

  onComplete(): void {
    if (this.status < 300) this.settle(undefined);
    else this.failWithAnswer();
  }

  /** A request that failed: refused, reset, cut off after its headers, timed out or aborted. */
  onError(error: Error): void {
    const timedOut = UNDICI_TIMEOUTS.has((error as { code?: unknown } | null)?.code);
    this.settle(networkFailure(timedOut ? new Error(`no answer within ${this.options.timeoutMs} ms`, { cause: error }) : error, this.options.what));
  }

  private failWithAnswer(): void {
    const detail = Buffer.concat(this.detail).toString('utf8').slice(0, DETAIL_CHARS);
    this.settle(answerFailure(this.status, this.retryAfter, detail, this.options.what));
  }

  private settle(error: DeliveryError | undefined): void {
    if (this.done) return;
    this.done = true;
    if (this.abortRequest !== undefined) postsBySignal.get(this.options.signal)?.delete(this);
    if (error === undefined) this.resolve();
    else this.reject(error);
  }
}

