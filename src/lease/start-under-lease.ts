import type { Lease, LeaseFactory } from './lease.js';

/** Work one instance of a deployment does at a time: a poll loop, a platform's connection. */
export interface LeasedWork {
  start(): void;
  stop(): void | Promise<void>;
}

/**
 * Starts `work` now when there is no lease factory (this instance works alone), or while it
 * holds lease `name`, stopping it when the lease is lost. Returns the lease, which close()
 * stops (and so stops the work) before the work's own stop.
 */
export function startUnderLease(factory: LeaseFactory | undefined, name: string, work: LeasedWork): Lease | undefined {
  const lease = factory?.(name);
  if (lease === undefined) {
    work.start();
    return undefined;
  }
  lease.start({ onAcquired: () => work.start(), onLost: () => work.stop() });
  return lease;
}
