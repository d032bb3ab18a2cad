import type { Logger } from 'pino';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { Mailboxes, Ownership } from './mailboxes.js';

/** One mailbox owned here: its token, what to do when the ownership is lost, and when Redis last confirmed it. */
interface Owned {
  readonly token: string;
  readonly onLost: () => void;
  confirmedAt: number;
  lost: boolean;
}

/** How long a mailbox stays owned by an instance that stopped renewing it: BullMQ's lock duration, the same lease. */
const DEFAULT_LEASE_MS = 30_000;

/**
 * The mailboxes this instance owns, their leases renewed together (one script every half
 * lease), as BullMQ renews its jobs' locks. An ownership is lost when Redis says another holds
 * it, or when Redis has not confirmed it for a whole lease (cut off: the key may have expired
 * and another instance taken over): its `onLost` is called once.
 */
export class MailboxOwners {
  private readonly owned = new Map<string, Owned>();
  private timer: NodeJS.Timeout | undefined;
  private renewing = false;

  readonly leaseMs: number;

  constructor(
    private readonly mailboxes: Mailboxes,
    leaseMs: number | undefined,
    private readonly logger: Logger,
  ) {
    this.leaseMs = leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** A fresh ownership to claim with. */
  ownership(token: string): Ownership {
    return { token, leaseMs: this.leaseMs };
  }

  /** Keeps `key`'s mailbox, owned by `token` (claimed just before), renewed until drop(key, token). */
  hold(key: string, token: string, onLost: () => void): void {
    this.owned.set(key, { token, onLost, confirmedAt: Date.now(), lost: false });
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.tick(), Math.max(1, Math.floor(this.leaseMs / 2)));
      this.timer.unref();
    }
  }

  /** Stops renewing `key`'s mailbox owned by `token` (a later ownership of the same mailbox here stays). */
  drop(key: string, token: string): void {
    if (this.owned.get(key)?.token === token) this.owned.delete(key);
    if (this.owned.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    // Before the renewal, which may hang as long as Redis does.
    const now = Date.now();
    for (const owned of this.owned.values()) if (now - owned.confirmedAt >= this.leaseMs) this.lose(owned);
    void this.renew();
  }

  private async renew(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    const held = [...this.owned].map(([key, { token }]) => ({ key, token }));
    const sentAt = Date.now();
    try {
      const lost = new Set(await this.mailboxes.renew(held, this.leaseMs));
      for (const { key, token } of held) {
        const owned = this.owned.get(key);
        // Dropped meanwhile, or owned again under a new token: not the one renewed.
        if (owned === undefined || owned.token !== token) continue;
        if (lost.has(key)) this.lose(owned);
        else owned.confirmedAt = Math.max(owned.confirmedAt, sentAt);
      }
    } catch (error) {
      this.logger.warn({ err: redisFailure(error), namespace: this.mailboxes.namespace }, 'could not renew the leases of the mailboxes drained here; trying again');
    } finally {
      this.renewing = false;
    }
  }

  private lose(owned: Owned): void {
    if (owned.lost) return;
    owned.lost = true;
    owned.onLost();
  }
}
