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
  /** At the first connection with no cursor stored, posts this long before it are caught up on (0: none). */
  readonly catchUpMs: number;
  /**
   * Where the time every post before was taken is kept (server ms), so a gateway started after
   * any downtime, or another instance taking over, catches up from there. Unset: catchUpMs.
   */
  readonly cursor?: MattermostCursor | undefined;
  readonly pingIntervalMs?: number;
}

/** The durable "every post before this was taken" of a bot's stream. */
export interface MattermostCursor {
  load(): Promise<number | undefined>;
  save(at: number): Promise<void>;
}

/** How often the cursor is saved while connected (and once more at stop). */
const CURSOR_SAVE_MS = 5_000;
/** A cursor older than this is not followed back: a day of posts at most, and the log says so. */
const CURSOR_MOST_BACK_MS = 24 * 3_600_000;

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
    const socket = this.socket;
    await socket?.close('stopped');
    await this.running;
    if (socket !== undefined) await this.saveCursor(socket);
  }

  /** Saves how far every post was taken: only when none waits, as a post still waiting would be skipped after a crash. */
  private async saveCursor(socket: MattermostSocket): Promise<void> {
    if (this.options.cursor === undefined || this.held !== undefined || !this.options.queue.idle) return;
    await this.options.cursor.save(socket.lastHeardAt - CATCH_UP_OVERLAP_MS).catch((error: unknown) => {
      this.options.logger.debug({ err: error }, 'mattermost cursor not saved; the next save tries again');
    });
  }

  /** Where the first connection catches up from: the stored cursor (at most a day back), else catchUpMs. */
  private async firstSince(): Promise<number | undefined> {
    const stored = await this.options.cursor?.load().catch((error: unknown) => {
      this.options.logger.warn({ err: error }, 'mattermost cursor not read; catching up by THREADLINE_MATTERMOST_CATCH_UP_MS');
      return undefined;
    });
    if (stored === undefined) return this.options.catchUpMs > 0 ? Date.now() - this.options.catchUpMs : undefined;
    const oldest = Date.now() - CURSOR_MOST_BACK_MS;
    if (stored < oldest) this.options.logger.warn({ since: new Date(stored).toISOString() }, 'mattermost: no gateway listened for over a day; posts older than a day are not caught up on');
    return Math.max(stored, oldest);
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    let since = await this.firstSince();
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
      const saving = setInterval(() => void this.saveCursor(socket), CURSOR_SAVE_MS);
      saving.unref();
      const reason = await socket.ended.finally(() => clearInterval(saving));
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
