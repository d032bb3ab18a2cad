import type { Logger } from 'pino';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { Mailboxes } from './mailboxes.js';

/** One mailbox owned here: its token, and what to do when the ownership is found lost. */
interface Owned {
  readonly token: string;
  readonly onLost: () => void;
}

/**
 * The mailboxes this instance owns, their leases renewed together (one script every half
 * lease), as BullMQ renews its jobs' locks. An ownership found lost (cut off from Redis past
 * the lease, so another instance owns the mailbox now) calls its `onLost`.
 */
export class MailboxOwners {
  private readonly owned = new Map<string, Owned>();
  private timer: NodeJS.Timeout | undefined;
  private renewing = false;

  constructor(
    private readonly mailboxes: Mailboxes,
    readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  /** A fresh ownership to claim with. */
  ownership(token: string): { readonly token: string; readonly leaseMs: number } {
    return { token, leaseMs: this.leaseMs };
  }

  /** Keeps `key`'s mailbox, owned by `token`, renewed until drop(key, token). */
  hold(key: string, token: string, onLost: () => void): void {
    this.owned.set(key, { token, onLost });
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.leaseMs / 2)));
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

  private async renew(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    const held = [...this.owned].map(([key, { token }]) => ({ key, token }));
    try {
      for (const key of await this.mailboxes.renew(held, this.leaseMs)) {
        const owned = this.owned.get(key);
        // Dropped meanwhile, or owned again under a new token: not the one found lost.
        if (owned === undefined || owned.token !== held.find((each) => each.key === key)?.token) continue;
        owned.onLost();
      }
    } catch (error) {
      this.logger.warn({ err: redisFailure(error), namespace: this.mailboxes.namespace }, 'could not renew the leases of the mailboxes drained here; trying again');
    } finally {
      this.renewing = false;
    }
  }
}
