import type { Logger } from 'pino';
import { messageOf } from '../../errors.js';
import type { InboundMessage } from '../platform.js';
import { postsSince } from './mattermost-catch-up.js';
import type { MattermostClient } from './mattermost-client.js';
import type { MattermostChannelInfo } from './mattermost-inbound.js';
import { MattermostSocket } from './mattermost-socket.js';
import type { HandQueue } from './mattermost-hand-queue.js';

export interface MattermostStreamOptions {
  readonly url: string;
  readonly token: string;
  readonly client: MattermostClient;
  readonly queue: HandQueue;
  readonly logger: Logger;
  /** The message of a post, or undefined for posts that are none (the bot's own, system messages…). */
  readonly inbound: (post: unknown, channel: MattermostChannelInfo, senderName?: unknown) => InboundMessage | undefined;
  /** At the first connection, posts this long before it are caught up on (0: none). */
  readonly catchUpMs: number;
  readonly pingIntervalMs?: number;
}

/** A catch-up after a cut reaches back this far before the last word heard: posts delivered late, and the two clocks' skew. */
export const CATCH_UP_OVERLAP_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;
const PING_INTERVAL_MS = 30_000;
/** The first reconnection is tried at once; each failure doubles the wait, up to the most. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MOST_MS = 30_000;

/**
 * Mattermost's websocket on this instance, from start() to stop(): connects, and on every
 * connection first catches up on the posts made since the last word heard on the one before
 * (REST, `posts?since=`), handing them in order before the live posts that arrived meanwhile;
 * a cut is followed by a new connection at once, then with a growing wait. Nothing the server
 * had is lost (it is caught up on) or taken twice (posts are handed by id, and intake
 * remembers ids durably).
 */
export class MattermostStream {
  /** The connection of this stream, once it is authenticated. */
  socket: MattermostSocket | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  /** Live posts that came while a catch-up ran: handed after it, in order. */
  private held: InboundMessage[] | undefined;

  constructor(private readonly options: MattermostStreamOptions) {}

  start(): void {
    this.running ??= this.run();
  }

  /** Closes the connection and stops reconnecting; resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.socket?.close('stopped');
    await this.running;
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    let since = this.options.catchUpMs > 0 ? Date.now() - this.options.catchUpMs : undefined;
    for (let failures = 0; !this.stopped; ) {
      let socket: MattermostSocket;
      // Held from the first frame on: a live post may come in the same read as the authentication's answer.
      this.held = since === undefined ? undefined : [];
      try {
        socket = await MattermostSocket.open({
          url: this.options.url,
          token: this.options.token,
          connectTimeoutMs: CONNECT_TIMEOUT_MS,
          pingIntervalMs: this.options.pingIntervalMs ?? PING_INTERVAL_MS,
          onEvent: (event, data) => this.onEvent(event, data),
        });
      } catch (error) {
        if (failures === 0) logger.warn({ err: error }, 'mattermost websocket not connected; trying again');
        await this.pause(reconnectWaitMs(failures++));
        continue;
      }
      if (this.stopped) {
        await socket.close('stopped');
        break;
      }
      this.socket = socket;
      if (since !== undefined && !(await this.catchUp(since))) {
        this.socket = undefined;
        await socket.close('catch-up failed');
        await this.pause(reconnectWaitMs(failures++));
        continue;
      }
      failures = 0;
      const reason = await socket.ended;
      this.socket = undefined;
      since = socket.lastHeardAt - CATCH_UP_OVERLAP_MS;
      if (!this.stopped) logger.info({ reason }, 'mattermost websocket ended; reconnecting, then catching up on what was posted meanwhile');
    }
  }

  /** Hands the posts made since `since`, then the live ones that came meanwhile; false when the server could not list them. */
  private async catchUp(since: number): Promise<boolean> {
    try {
      const { posts, truncated } = await postsSince(this.options.client, since);
      if (truncated.length > 0) this.options.logger.warn({ channels: truncated.length }, 'mattermost catch-up: a channel had more posts than one call returns; older ones may be missed');
      for (const { post, channel } of posts) {
        const message = this.options.inbound(post, channel);
        if (message !== undefined) this.options.queue.push(message);
      }
      return true;
    } catch (error) {
      this.options.logger.warn({ err: error }, `mattermost catch-up failed (${messageOf(error)}); reconnecting to try again`);
      return false;
    } finally {
      // Taken either way: they did come; a failed catch-up's next try skips them as handed.
      for (const message of this.held?.splice(0) ?? []) this.options.queue.push(message);
      this.held = undefined;
    }
  }

  private onEvent(event: string, data: Record<string, unknown>): void {
    if (event !== 'posted' || typeof data['post'] !== 'string') return;
    let post: unknown;
    try {
      post = JSON.parse(data['post']);
    } catch {
      return;
    }
    const message = this.options.inbound(post, { type: data['channel_type'], displayName: data['channel_display_name'] }, data['sender_name']);
    if (message === undefined) return;
    if (this.held !== undefined) this.held.push(message);
    else this.options.queue.push(message);
  }

  /** Waits `ms`, or less when stopped. */
  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** The wait before reconnection attempt `failures + 1`, with a fifth of jitter so instances do not knock together. */
function reconnectWaitMs(failures: number): number {
  const base = Math.min(RECONNECT_MOST_MS, RECONNECT_FIRST_MS * 2 ** failures);
  return base * (0.8 + Math.random() * 0.4);
}
