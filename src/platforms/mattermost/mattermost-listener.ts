import type { Logger } from 'pino';
import type { Lease, LeaseFactory } from '../../lease/lease.js';
import type { InboundMessage } from '../platform.js';
import { HandQueue } from './mattermost-hand-queue.js';
import type { MattermostSocket } from './mattermost-socket.js';
import { MattermostStream, type MattermostStreamOptions } from './mattermost-stream.js';
import { startUnderLease } from '../../lease/start-under-lease.js';

export interface MattermostListenerOptions extends Omit<MattermostStreamOptions, 'queue'> {
  /** Hands one message to intake, trying again until it is taken or refused for good. */
  readonly hand: (message: InboundMessage) => Promise<void>;
  readonly logger: Logger;
  /**
   * Several instances on one Redis: the websocket runs only on the instance holding this lease
   * (two would each take every post). Unset, this instance listens alone.
   */
  readonly lease?: LeaseFactory | undefined;
}

/** The lease's name: one websocket per bot's deployment. */
export const MATTERMOST_WEBSOCKET_LEASE = 'mattermost-websocket';

/**
 * Mattermost's posts on this instance: the websocket stream alone, or under the lease in the
 * distributed mode, where the instance that takes the lease over catches up on what was posted
 * while nobody listened (THREADLINE_MATTERMOST_CATCH_UP_MS).
 */
export class MattermostListener {
  private readonly queue: HandQueue;
  private stream: MattermostStream | undefined;
  private lease: Lease | undefined;
  private closed = false;

  constructor(private readonly options: MattermostListenerOptions) {
    this.queue = new HandQueue({
      hand: options.hand,
      logger: options.logger,
      onFull: (full) => (full ? this.socket?.pause() : this.socket?.resume()),
    });
  }

  /** The websocket of this instance, when it holds one. */
  get socket(): MattermostSocket | undefined {
    return this.stream?.socket;
  }

  start(): void {
    if (this.closed) return;
    this.lease = startUnderLease(this.options.lease, MATTERMOST_WEBSOCKET_LEASE, { start: () => this.startStream(), stop: () => this.stopStream() });
  }

  /** Closes the websocket once the post in hand is taken (intake is still open then), then releases the lease. */
  async close(): Promise<void> {
    this.closed = true;
    // The lease's stop() stops the stream (onLost) before it releases the lease.
    await this.lease?.stop();
    await this.stopStream();
  }

  private startStream(): void {
    if (this.closed || this.stream !== undefined) return;
    this.stream = new MattermostStream({ ...this.options, queue: this.queue });
    this.stream.start();
  }

  /** Stops the stream; posts still waiting are let go: the next stream's catch-up finds them. */
  private async stopStream(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    await stream?.stop();
    await this.queue.clear();
  }
}
