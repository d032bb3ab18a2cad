/**
 * Why a holder no longer holds its lease. `taken`: its key expired (or was deleted) and it may
 * be another instance's now; `unreachable`: Redis failed or did not answer the renewal in time;
 * `stopping`: stop() was called and releases it once the holder's work is wound down.
 */
export type LeaseLoss = 'taken' | 'unreachable' | 'stopping';

/** What a lease tells its user. Called from the root context, one at a time. */
export interface LeaseListener {
  /** This instance holds the lease now: start the work only one instance may do. */
  onAcquired(): void;
  /**
   * It no longer does (or is about to release it): stop that work at once. The lease awaits
   * the promise before it tries to acquire again, or releases at stop.
   */
  onLost(reason: LeaseLoss): void | Promise<void>;
  /** After each try to acquire or renew, with whether this instance holds it: a hook for logs and tests. */
  onAttempt?(held: boolean): void;
}

/** A lease one instance holds at a time across all instances: who may run work that must not run twice. */
export interface Lease {
  /** Whether this instance holds it, as of the last acquire or renewal. */
  readonly held: boolean;
  /** Tries to acquire it now, then keeps trying (or renewing) until stop(). Once only. */
  start(listener: LeaseListener): void;
  /**
   * Stops trying. When held: keeps renewing while the listener's onLost('stopping') winds the
   * work down, then releases it, so a waiting instance takes over at its next try instead of
   * after the lease runs out. Never throws: a release that fails leaves the key to expire.
   */
  stop(): Promise<void>;
}

/** Makes the lease of `name` (such as `telegram-polling`): one per kind of singleton work. */
export type LeaseFactory = (name: string) => Lease;
