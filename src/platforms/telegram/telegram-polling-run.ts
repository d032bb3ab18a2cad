import { Bot } from 'grammy';
import type { Logger } from 'pino';
import { runDetached } from '../../session/index.js';
import type { InboundMessage } from '../platform.js';
import { telegramInbound } from './telegram-inbound.js';

export interface TelegramPollingRunOptions {
  readonly token: string;
  readonly apiRoot: string;
  readonly logger: Logger;
  /** Hands one message to intake; polling waits for it, so updates stay with Telegram meanwhile. */
  readonly hand: (message: InboundMessage) => Promise<void>;
  /** Polling ended by itself (401, 409 Conflict, a failed start): not called after stop(). */
  readonly onEnded?: (error: unknown) => void;
}

/**
 * One run of long polling (getUpdates through grammY), from start() to stop(). A new run
 * starts from the first update Telegram has not had confirmed.
 */
export class TelegramPollingRun {
  private readonly bot: Bot;
  /** The update being handed to intake, which stop() lets finish. */
  private handing: Promise<void> = Promise.resolve();
  /** Set once stop() has let the update in hand finish: later ones wait for the next run. */
  private closing = false;
  private stopped: Promise<void> | undefined;

  constructor(private readonly options: TelegramPollingRunOptions) {
    this.bot = new Bot(options.token, { client: { apiRoot: options.apiRoot } });
    this.bot.on(['message', 'channel_post', 'callback_query:data'], (ctx) => {
      const message = telegramInbound(ctx.update);
      if (message === undefined || this.closing) return;
      this.handing = options.hand(message);
      // A pressed button's spinner ends once the press is taken; best-effort.
      if (ctx.callbackQuery !== undefined) void this.handing.then(() => ctx.answerCallbackQuery(), () => undefined).catch(() => undefined);
      return this.handing;
    });
    this.bot.catch((error) => options.logger.error({ err: error.error }, 'telegram update failed'));
  }

  /** Polls from the root context (pitfall: Long-lived loops holding a request's context). */
  start(): void {
    runDetached(() =>
      void this.bot.start({ drop_pending_updates: false }).catch((error: unknown) => {
        this.options.logger.error({ err: error }, 'telegram polling stopped');
        if (this.stopped === undefined) this.options.onEnded?.(error);
      }),
    );
  }

  /**
   * Stops once the update in hand is accepted (intake is still open then), so the offset
   * grammY confirms never covers an update that was not taken. Once it resolves this run
   * makes no more getUpdates calls (grammY aborts the one under way).
   */
  stop(): Promise<void> {
    this.stopped ??= this.wind();
    return this.stopped;
  }

  private async wind(): Promise<void> {
    // grammY may hand the next update of its batch while the last one finishes: wait for each.
    let inHand: Promise<void>;
    do {
      inHand = this.handing;
      await inHand.catch(() => {});
    } while (inHand !== this.handing);
    // grammY's stop() confirms updates up to the one in hand; the rest of its batch is handed
    // again at the next start, so taking them now would run them twice.
    this.closing = true;
    await this.bot.stop().catch((error: unknown) => this.options.logger.warn({ err: error }, 'telegram polling did not confirm its last update'));
  }
}
