import { setMaxListeners } from 'node:events';
import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { ClientPrefix, MatrixHttpApi, MediaPrefix, Method, type IRequestOpts } from 'matrix-js-sdk/lib/http-api/index.js';
import type { QueryDict } from 'matrix-js-sdk/lib/utils.js';
import { TypedEventEmitter } from 'matrix-js-sdk/lib/models/typed-event-emitter.js';

export interface MatrixClientOptions {
  /** The client-server API root, such as https://matrix.example.org. */
  readonly homeserverUrl: string;
  readonly accessToken: string;
}

/** How long a request may go unanswered, /sync's long poll aside. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long past its own `timeout` a /sync may take before it is given up. */
const SYNC_GRACE_MS = 15_000;

/**
 * The client-server API calls the adapter makes, through matrix-js-sdk's HTTP layer (its
 * MatrixHttpApi: the access token in the Authorization header, never in a URL; Matrix's
 * error bodies as MatrixError with errcode and retry_after_ms). The SDK's client and sync
 * loop are not used (docs/decisions.md says why). Every call runs with tracing suppressed:
 * the fetch instrumentation would put room and event ids, which are chat ids, into span
 * URLs past the span privacy setting.
 */
export class MatrixClient {
  private readonly http: MatrixHttpApi<{ baseUrl: string; prefix: string; accessToken: string; onlyData: true; useAuthorizationHeader: true }>;

  constructor(options: MatrixClientOptions) {
    this.http = new MatrixHttpApi(new TypedEventEmitter(), {
      baseUrl: options.homeserverUrl,
      prefix: ClientPrefix.V3,
      accessToken: options.accessToken,
      onlyData: true,
      useAuthorizationHeader: true,
    });
    // The SDK joins its own abort signal to every request's, one listener a request in flight:
    // concurrent sends are by design, not a leak, so Node need not warn past ten.
    const own = (this.http as unknown as { abortController?: unknown }).abortController;
    if (own instanceof AbortController) setMaxListeners(0, own.signal);
  }

  /** GET /account/whoami: the account the access token belongs to. */
  async whoami(signal?: AbortSignal): Promise<{ readonly userId: string; readonly deviceId: string | undefined }> {
    const answer = await this.request<{ user_id?: unknown; device_id?: unknown }>(Method.Get, '/account/whoami', undefined, undefined, signal);
    if (typeof answer.user_id !== 'string' || !answer.user_id.startsWith('@')) throw new Error('The homeserver answered whoami without a user id');
    return { userId: answer.user_id, deviceId: typeof answer.device_id === 'string' ? answer.device_id : undefined };
  }

  /** GET /joined_rooms: the rooms the account is in (untrusted: ids not checked). */
  async joinedRooms(signal?: AbortSignal): Promise<unknown[]> {
    const answer = await this.request<{ joined_rooms?: unknown }>(Method.Get, '/joined_rooms', undefined, undefined, signal);
    return Array.isArray(answer.joined_rooms) ? answer.joined_rooms : [];
  }

  /** GET /sync: events after `since` (all rooms' recent ones without it), waiting up to `timeoutMs` for some. The answer is untrusted. */
  sync(since: string | undefined, timeoutMs: number, filter: string, signal: AbortSignal): Promise<unknown> {
    const query: QueryDict = { timeout: timeoutMs, filter, ...(since === undefined ? {} : { since }) };
    return this.request(Method.Get, '/sync', query, undefined, signal, timeoutMs + SYNC_GRACE_MS);
  }

  /** GET /rooms/{roomId}/messages backwards from `from` down to `to` (a sync token): a gap's events, newest first. */
  messages(roomId: string, from: string, to: string, limit: number, filter: string, signal: AbortSignal): Promise<unknown> {
    return this.request(Method.Get, `/rooms/${encodeURIComponent(roomId)}/messages`, { from, to, dir: 'b', limit, filter }, undefined, signal);
  }

  /** PUT /rooms/{roomId}/send/m.room.message/{txnId}: the same txnId sends once, however often it is retried. */
  async sendMessage(roomId: string, txnId: string, content: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    const path = `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`;
    const answer = await this.request<{ event_id?: unknown }>(Method.Put, path, undefined, content, signal);
    if (typeof answer.event_id !== 'string') throw new Error('The homeserver answered a send without an event id');
    return answer.event_id;
  }

  /** GET /rooms/{roomId}/event/{eventId}: one event as the homeserver keeps it (a redacted one has empty content). */
  event(roomId: string, eventId: string, signal: AbortSignal): Promise<unknown> {
    return this.request(Method.Get, `/rooms/${encodeURIComponent(roomId)}/event/${encodeURIComponent(eventId)}`, undefined, undefined, signal);
  }

  /** PUT /rooms/{roomId}/typing/{userId}: shown for `timeoutMs` unless sent again. */
  async typing(roomId: string, userId: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    await this.request(Method.Put, `/rooms/${encodeURIComponent(roomId)}/typing/${encodeURIComponent(userId)}`, undefined, { typing: true, timeout: timeoutMs }, signal);
  }

  /** POST /_matrix/media/v3/upload: the file's `mxc://` URI. */
  async upload(bytes: Buffer, filename: string, contentType: string, signal: AbortSignal): Promise<string> {
    const answer = await context.with(suppressTracing(context.active()), () =>
      this.http.authedRequest<{ content_uri?: unknown }>(Method.Post, '/upload', { filename }, bytes, {
        ...requestOptions(signal, REQUEST_TIMEOUT_MS),
        prefix: MediaPrefix.V3,
        headers: { 'Content-Type': contentType },
      }),
    );
    if (typeof answer.content_uri !== 'string') throw new Error('The homeserver answered an upload without a content URI');
    return answer.content_uri;
  }

  private request<T>(method: Method, path: string, query: QueryDict | undefined, body: Record<string, unknown> | undefined, signal?: AbortSignal, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
    return context.with(suppressTracing(context.active()), () =>
      this.http.authedRequest<T>(method, path, query, body, requestOptions(signal, timeoutMs)),
    );
  }
}

/** The SDK types its options with DOM's RequestInit `priority`, which Node's types lack: cast once here. */
function requestOptions(signal: AbortSignal | undefined, timeoutMs: number): IRequestOpts {
  return { ...(signal === undefined ? {} : { abortSignal: requestSignal(signal) }), localTimeoutMs: timeoutMs } as IRequestOpts;
}

/**
 * The SDK adds a listener to a request's signal for each request in flight. A caller's signal
 * (the gateway's shutdown, shared by every send) gets one listener instead, on a signal of
 * the client's own that follows it and takes any number.
 */
const followers = new WeakMap<AbortSignal, AbortSignal>();

function requestSignal(signal: AbortSignal): AbortSignal {
  let follower = followers.get(signal);
  if (follower === undefined) {
    const controller = new AbortController();
    setMaxListeners(0, controller.signal); // one listener a request in flight, by design
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
    follower = controller.signal;
    followers.set(signal, follower);
  }
  return follower;
}
