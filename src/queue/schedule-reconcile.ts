import type { Logger } from 'pino';
import type { Lease } from '../lease/lease.js';
import { runDetached } from '../session/index.js';
import type { ScheduleTable } from '../store/store.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { ScheduleQueue } from './schedule-queue.js';

export interface ScheduleReconcileOptions {
  readonly schedules: ScheduleQueue;
  /** The records, which are the truth the queue is matched to. */
  readonly store: ScheduleTable;
  readonly logger: Logger;
  /** A new lease each start: while this instance holds it, it reconciles every `everyMs`. None: only once. */
  readonly lease?: (() => Lease) | undefined;
  readonly everyMs: number;
}

/** Records reconciled at once: a few round trips in flight, not thousands. */
const RECONCILE_BATCH = 50;

/**
 * Matches the schedules queue to the stored records: every record gets its scheduler or job,
 * and a scheduler whose record is gone is removed. Once at start, then every `everyMs` on the
 * instance holding the lease, so what broke since the start is repaired.
 */
export class ScheduleReconcile {
  private lease: Lease | undefined;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private reconciling: Promise<void> | undefined;

  constructor(private readonly options: ScheduleReconcileOptions) {}

  /** A reconcile that never throws: what it could not do waits for the next one. */
  async once(): Promise<void> {
    try {
      await runDetached(() => this.reconcile());
    } catch (error) {
      this.options.logger.error({ err: redisFailure(error) }, 'could not match the schedules queue to the stored jobs; tried again at the next reconcile');
    }
  }

  /** Takes a new lease, if there is one, and reconciles every `everyMs` while it is held. */
  start(): void {
    const lease = this.options.lease?.();
    if (lease === undefined) return;
    this.lease = lease;
    lease.start({
      onAcquired: () => {
        this.leading = true;
        this.later();
      },
      onLost: async () => {
        this.leading = false;
        clearTimeout(this.timer);
        await this.reconciling;
      },
    });
  }

  /** Releases the lease once the reconcile under way has ended. */
  async stop(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    // Its onLost ends the reconciling, when this instance held it.
    await lease?.stop();
    this.leading = false;
    clearTimeout(this.timer);
    await this.reconciling;
  }

  private later(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.reconciling = this.once().finally(() => {
        this.reconciling = undefined;
        if (this.leading) this.later();
      });
    }, this.options.everyMs);
  }

  private async reconcile(): Promise<void> {
    const { store, logger, schedules } = this.options;
    // Before the records: a scheduler missing here but added since is looked up again by ensure().
    const schedulers = new Map((await schedules.queue.getJobSchedulers()).map((scheduler) => [scheduler.key, scheduler.next]));
    const records = await store.all();
    const now = Date.now();
    for (let start = 0; start < records.length; start += RECONCILE_BATCH) {
      await Promise.all(
        records.slice(start, start + RECONCILE_BATCH).map((record) =>
          schedules.ensure(record, now, schedulers).catch((error: unknown) => {
            logger.error({ schedule: record.id, err: redisFailure(error) }, 'a stored job could not be scheduled; retried at the next reconcile');
          }),
        ),
      );
    }
    const stored = new Set(records.map((record) => record.id));
    for (const key of schedulers.keys()) {
      // Read again: a job added since the records were read has its scheduler already.
      if (stored.has(key) || (await store.get(key)) !== undefined) continue;
      await schedules.queue.removeJobScheduler(key);
    }
  }
}
