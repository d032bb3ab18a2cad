import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { runDetached } from '../../session/index.js';
import type { InboundMessage } from '../platform.js';

export interface HandQueueOptions {
  /** Hands one message to intake, trying again until it is taken or refused for good; resolves then. */
  readonly hand: (message: InboundMessage) => Promise<void>;
  /** Called with true when the queue holds too much (stop reading), false once it has room again. */
  readonly onFull: (full: boolean) => void;
  readonly logger: Logger;
}

/** Messages queued beyond this stop the reading; it starts again below LOW_WATER. */
const HIGH_WATER = 1_000;
const LOW_WATER = 100;
/** Post ids handed lately: a catch-up's overlap with the live stream is skipped here, before intake. */
const RECENT_IDS = 10_000;

/**
 * The posts of the websocket and of catch-ups, handed to intake one at a time in the order
 * they came, so each chat's messages keep their order. A post handed lately is not handed
 * again (intake's durable idempotency would answer it as a duplicate anyway). Too many waiting
 * (intake full, or slow) stops the reading, so what waits stays on the server, not in memory.
 */
export class HandQueue {
  private readonly waiting: InboundMessage[] = [];
  private readonly recent = new LRUCache<string, true>({ max: RECENT_IDS });
  private draining: Promise<void> | undefined;
  private full = false;

  constructor(private readonly options: HandQueueOptions) {}

  /** Nothing waits and nothing is in hand: every post pushed so far was taken or refused. */
  get idle(): boolean {
    return this.waiting.length === 0 && this.draining === undefined;
  }

  push(message: InboundMessage): void {
    const id = message.session.messageId!;
    if (this.recent.has(id)) return;
    this.recent.set(id, true);
    this.waiting.push(message);
    if (!this.full && this.waiting.length > HIGH_WATER) {
      this.full = true;
      this.options.onFull(true);
    }
    this.draining ??= runDetached(() => this.drain());
  }

  /**
   * Forgets what waits (the next catch-up finds it again) and resolves once the message in hand
   * is taken or refused: after that nothing more is handed until the next push.
   */
  async clear(): Promise<void> {
    for (const message of this.waiting.splice(0)) this.recent.delete(message.session.messageId!);
    await this.draining;
  }

  private async drain(): Promise<void> {
    for (let message = this.waiting.shift(); message !== undefined; message = this.waiting.shift()) {
      try {
        await this.options.hand(message);
      } catch (error) {
        // Refused for good (a malformed post, or intake closed for shutdown): another try would fail alike.
        this.options.logger.warn({ err: error, chat: message.session.chatId }, 'mattermost post not taken');
      }
      if (this.full && this.waiting.length < LOW_WATER) {
        this.full = false;
        this.options.onFull(false);
      }
    }
    this.draining = undefined;
  }
}
