import type { Logger } from 'pino';
import type { Lease, LeaseFactory } from '../../lease/lease.js';
import { runDetached } from '../../session/index.js';
import { TelegramPollingRun, type TelegramPollingRunOptions } from './telegram-polling-run.js';

export interface TelegramPollerOptions {
  readonly token: string;
  readonly apiRoot: string;
  readonly logger: Logger;
  /**
   * Several instances on one Redis: polling runs only on the instance holding this lease (two
   * pollers get 409 Conflict and take each other's updates). Unset, this instance polls alone.
   */
  readonly pollingLease?: LeaseFactory | undefined;
}

/** The lease's name: one poller per bot token's deployment. */
export const TELEGRAM_POLLING_LEASE = 'telegram-polling';
/** A run that ended by itself (409, a network failure at start) while this instance holds the lease starts again after this. */
const POLL_RESTART_MS = 3_000;

/**
 * Long polling on this instance: alone, or under the polling lease in the distributed mode,
 * where a run that ends by itself (409 Conflict) is started again while the lease is held.
 */
export class TelegramPoller {
  /** The polling run under way, if any. */
  private run: TelegramPollingRun | undefined;
  private lease: Lease | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: TelegramPollerOptions) {}

  /** Polls, handing each message to `hand` and waiting for it; nothing once closed. */
  start(hand: TelegramPollingRunOptions['hand']): void {
    if (this.closed) return;
    const lease = this.options.pollingLease?.(TELEGRAM_POLLING_LEASE);
    if (lease === undefined) {
      this.startRun(hand, undefined);
      return;
    }
    this.lease = lease;
    lease.start({
      onAcquired: () => this.startRun(hand, lease),
      onLost: () => this.stopRun(),
    });
  }

  /**
   * Stops polling once the update in hand is accepted, so the offset grammY confirms never
   * covers an update that was not taken; then releases the polling lease, so another instance
   * polls at once.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    // The lease's stop() stops polling (onLost) before it releases the lease.
    await this.lease?.stop();
    await this.stopRun();
  }

  /** A new polling run; under a lease, one that ends by itself is started again while the lease is held. */
  private startRun(hand: TelegramPollingRunOptions['hand'], lease: Lease | undefined): void {
    if (this.closed || this.run !== undefined) return;
    const run = new TelegramPollingRun({
      token: this.options.token,
      apiRoot: this.options.apiRoot,
      logger: this.options.logger,
      hand,
      ...(lease === undefined
        ? {}
        : {
            onEnded: () => {
              if (this.run === run) this.run = undefined;
              clearTimeout(this.restartTimer);
              this.restartTimer = runDetached(() =>
                setTimeout(() => {
                  if (lease.held) this.startRun(hand, lease);
                }, POLL_RESTART_MS),
              );
            },
          }),
    });
    this.run = run;
    run.start();
  }

  /** Stops the polling run under way, if any. */
  private async stopRun(): Promise<void> {
    clearTimeout(this.restartTimer);
    const run = this.run;
    this.run = undefined;
    await run?.stop();
  }
}
