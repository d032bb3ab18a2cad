import type { Lease, LeaseFactory } from '../../lease/lease.js';
import { MatrixSyncRun, type MatrixSyncRunOptions } from './matrix-sync-run.js';
import { startUnderLease } from '../../lease/start-under-lease.js';

/** The lease's name: one /sync loop per deployment. */
export const MATRIX_SYNC_LEASE = 'matrix-sync';

/**
 * The /sync loop on this instance: alone, or in the distributed mode only while this instance
 * holds the sync lease (two loops would take each batch twice, and move the token under each
 * other). A lost lease stops the run at once; the next holder reads on from the stored token.
 */
export class MatrixSyncer {
  private run: MatrixSyncRun | undefined;
  private lease: Lease | undefined;
  private closed = false;

  constructor(
    private readonly options: Omit<MatrixSyncRunOptions, 'hand'>,
    private readonly syncLease: LeaseFactory | undefined,
  ) {}

  start(hand: MatrixSyncRunOptions['hand']): void {
    if (this.closed) return;
    this.lease = startUnderLease(this.syncLease, MATRIX_SYNC_LEASE, { start: () => this.startRun(hand), stop: () => this.stopRun() });
  }

  /** Stops the loop once the messages in hand are accepted, then releases the lease, so another instance syncs at once. */
  async close(): Promise<void> {
    this.closed = true;
    // The lease's stop() stops the run (onLost) before it releases the lease.
    await this.lease?.stop();
    await this.stopRun();
  }

  private startRun(hand: MatrixSyncRunOptions['hand']): void {
    if (this.closed || this.run !== undefined) return;
    this.run = new MatrixSyncRun({ ...this.options, hand });
    this.run.start();
  }

  private async stopRun(): Promise<void> {
    const run = this.run;
    this.run = undefined;
    await run?.stop();
  }
}
