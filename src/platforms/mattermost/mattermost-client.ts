import mattermostClient from '@mattermost/client';
import type { Options } from '@mattermost/types/client4';
import { DeliveryError, messageOf, retryAfterMs } from '../../errors.js';
import { VERSION } from '../../version.js';

/** Mattermost's ids: 26 lowercase letters and digits. */
export const MATTERMOST_ID = /^[a-z0-9]{26}$/;

/** An error answer's body is quoted this far. */
const DETAIL_CHARS = 300;

/**
 * A Mattermost API call that failed: `status` is its HTTP status (0 when no answer came) and
 * `serverErrorId` the server's error id (`api.post.create_post.root_id.app_error`), when it
 * gave one. Network failures, 5xx and 429 are retryable, a 429 with the wait its headers ask.
 */
export class MattermostApiError extends DeliveryError {
  constructor(
    message: string,
    readonly status: number,
    readonly serverErrorId: string | undefined,
    options: { retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(message, { retryable: status === 0 || status === 429 || status >= 500, ...options });
    this.name = 'MattermostApiError';
  }
}

export interface MattermostClientOptions {
  /** The server's address, without a trailing slash. */
  readonly url: string;
  readonly token: string;
  /** A call with no whole answer within this long fails (retryable). */
  readonly timeoutMs: number;
}

/**
 * The SDK's Client4, its calls (createPost, patchPost, getMe, getPostsSince…) sent through a
 * doFetch of our own, the hook the SDK leaves to subclasses: its own reads only JSON error
 * bodies, so a 429 (plain text "limit exceeded") loses its status and its Retry-After, and it
 * takes no time limit. Here every failure is a MattermostApiError with the status, the
 * server's error id and, on a 429, the wait from Retry-After (or X-RateLimit-Reset).
 */
export class MattermostClient extends mattermostClient.Client4 {
  constructor(private readonly settings: MattermostClientOptions) {
    super();
    this.setUrl(settings.url);
    this.setToken(settings.token);
    this.setIncludeCookies(false);
    this.setUserAgent(`threadline/${VERSION}`);
  }

  /** users/{me}/typing: "typing…" in the channel (and thread) for a few seconds, without a websocket. */
  publishTyping(channelId: string, parentId: string): Promise<unknown> {
    return this.doFetch(`${this.getUserRoute('me')}/typing`, { method: 'post', body: JSON.stringify({ channel_id: channelId, parent_id: parentId }) });
  }

  protected override doFetch = async <T>(url: string, options: Options): Promise<T> => {
    const what = `Mattermost ${(options.method ?? 'get').toUpperCase()} ${routeOf(url, this.getUrl())}`;
    const signal = options.signal ? AbortSignal.any([AbortSignal.timeout(this.settings.timeoutMs), options.signal]) : AbortSignal.timeout(this.settings.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { ...(this.getOptions(options) as RequestInit), signal });
      text = await response.text();
    } catch (error) {
      const reason = signal.aborted && !options.signal?.aborted ? `no answer within ${this.settings.timeoutMs} ms` : messageOf(error);
      throw new MattermostApiError(`${what} could not be reached: ${reason}`, 0, undefined, { cause: error });
    }
    const body = parseJson(text, response.headers.get('content-type'));
    if (response.ok) return body as T;
    const serverError = typeof body === 'object' && body !== null ? (body as { id?: unknown; message?: unknown }) : undefined;
    const serverErrorId = typeof serverError?.id === 'string' ? serverError.id : undefined;
    const detail = serverError === undefined ? text.trim().slice(0, DETAIL_CHARS) : [serverErrorId, serverError.message].filter((part) => typeof part === 'string' && part !== '').join(': ');
    throw new MattermostApiError(`${what} answered ${response.status}${detail === '' ? '' : `: ${detail.slice(0, DETAIL_CHARS)}`}`, response.status, serverErrorId, {
      retryAfterMs: response.status === 429 ? rateLimitWaitMs(response.headers) : undefined,
    });
  };
}

/** A 429's wait: Retry-After, else the rate limiter's X-RateLimit-Reset (seconds until the bucket refills). */
function rateLimitWaitMs(headers: Headers): number | undefined {
  return retryAfterMs(headers.get('retry-after') ?? undefined) ?? retryAfterMs(headers.get('x-ratelimit-reset') ?? undefined);
}

function parseJson(text: string, contentType: string | null): unknown {
  if (!(contentType ?? '').includes('json') || text === '') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The call's path with its ids as `:id` and no query: names the route in errors and logs without naming a chat. */
function routeOf(url: string, base: string): string {
  return url
    .slice(base.length)
    .split('?')[0]!
    .replace(/\/[a-z0-9]{26}(?=\/|$)/g, '/:id');
}
