import { Queue, type JobsOptions, type RepeatStrategy } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ScheduleRecord } from '../store/store.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { DEFAULT_TIMEZONE } from '../tools/cron/cron-expression.js';
import type { ParseCron } from '../tools/cron/run-schedule.js';
import { keptAWeek } from './lease-worker-options.js';
import { dueJobId, tickJobId, tickOf, type ScheduleJobData } from './schedule-job.js';

export interface ScheduleQueueOptions {
  /** The commands' connection, which fails fast while Redis is away. Shared, never closed here. */
  readonly commands: Redis;
  readonly keys: RedisKeys;
  /** The pause before a run refused for now is tried again. */
  readonly retryMs: number;
  /** Reads a record's cron expression. */
  readonly parse: ParseCron;
  readonly logger: Logger;
}

/** A run refused for now is tried again until it goes, as the embedded scheduler does: no end in practice. */
const RETRY_ATTEMPTS = 1_000_000;
/** A job in one of these has run or never will: it holds no run of its own. */
const SETTLED = new Set(['completed', 'failed', 'unknown']);

/**
 * The schedules queue as the stored records see it: each record's job scheduler (cron) or job
 * of its next run, added idempotently so that instances doing it at once add each job once.
 */
export class ScheduleQueue {
  /** The next tick of a cron expression, for the queue and its workers alike. */
  readonly repeatStrategy: RepeatStrategy;
  private readonly jobOptions: JobsOptions;
  private instance: Queue | undefined;

  constructor(private readonly options: ScheduleQueueOptions) {
    const { parse } = options;
    this.repeatStrategy = (millis, repeat) => {
      if (repeat.pattern === undefined) return undefined;
      try {
        return parse(repeat.pattern, repeat.tz ?? DEFAULT_TIMEZONE).nextAfter(millis);
      } catch {
        // No tick for an expression that no longer parses: ensure() then gives the record one run, which logs why and removes it.
        return undefined;
      }
    };
    this.jobOptions = {
      attempts: RETRY_ATTEMPTS,
      backoff: { type: 'fixed', delay: options.retryMs },
      removeOnComplete: true,
      removeOnFail: keptAWeek(1_000),
      // Each failed attempt would otherwise add its stack to the job in Redis, for as long as the run is refused.
      stackTraceLimit: 1,
    };
  }

  /** The queue, made on first use: a tool may add a job before start(). */
  get queue(): Queue {
    if (this.instance === undefined) {
      const queue = new Queue(this.options.keys.schedulesQueue, {
        connection: this.options.commands,
        prefix: this.options.keys.queuePrefix,
        settings: { repeatStrategy: this.repeatStrategy },
      });
      // Its failures reach the caller of each command; an outage is logged once, by the connection's owner.
      queue.on('error', () => undefined);
      this.instance = queue;
    }
    return this.instance;
  }

  /** Takes the queue out for its owner to close; the next use makes a new one. */
  detach(): Queue | undefined {
    const queue = this.instance;
    this.instance = undefined;
    return queue;
  }

  /** Makes sure `record` runs, idempotently, so that instances doing it at once add each job once. */
  async ensure(record: ScheduleRecord, now: number, schedulers?: ReadonlyMap<string, number | undefined>): Promise<void> {
    if (record.cron === undefined) {
      await this.addRunUnlessPending(record, now);
      return;
    }
    // An overdue run gets its job before any tick, so that no tick finds it without one and runs it too.
    const overdue = record.nextAt <= now;
    let added = overdue && (await this.addRunUnlessPending(record, now));
    // An upsert over a live scheduler would move its pending tick: only one with none is made again.
    const first = (await this.nextTick(record.id, schedulers)) ?? (await this.schedule(record));
    // A run before the first tick (computed a moment after the record's), or with no tick at all, gets a job of its own.
    if (!overdue && (first === undefined || record.nextAt < first)) added = await this.addRunUnlessPending(record, now);
    // Said once, as its last run is queued, not at every reconcile until then.
    if (first === undefined && added) {
      this.options.logger.error(
        { schedule: record.id, cron: record.cron, timezone: record.timezone },
        'a stored cron expression gives no next run (it no longer parses); the job runs once more, which removes it',
      );
    }
  }

  /** Adds the job of the run due at the record's nextAt, to run in `delayMs`; a second add of it is a no-op. */
  async addRun(record: ScheduleRecord, delayMs: number): Promise<void> {
    const data: ScheduleJobData = { id: record.id, dueAt: record.nextAt };
    await this.queue.add('run', data, { ...this.jobOptions, jobId: dueJobId(record.id, record.nextAt), delay: delayMs });
  }

  /** Whether the run due at the record's nextAt has a job of its own still to run. */
  async hasRunJob(record: ScheduleRecord): Promise<boolean> {
    const [due, tick] = await Promise.all([this.pending(dueJobId(record.id, record.nextAt)), this.pending(tickJobId(record.id, record.nextAt))]);
    return due || tick;
  }

  /** The due time of the scheduler's pending tick; undefined when it has none: no scheduler, or its next job is gone. */
  private async nextTick(id: string, schedulers?: ReadonlyMap<string, number | undefined>): Promise<number | undefined> {
    const next = schedulers?.has(id) === true ? schedulers.get(id) : (await this.queue.getJobScheduler(id))?.next;
    if (next === undefined) return undefined;
    if (await this.pending(tickJobId(id, next))) return next;
    // Its tick may have been taken and the next one added since `next` was read.
    const again = (await this.queue.getJobScheduler(id))?.next;
    return again !== undefined && again !== next && (await this.pending(tickJobId(id, again))) ? again : undefined;
  }

  /** Makes the record's scheduler; its first tick, or undefined when the expression gives none. */
  private async schedule(record: ScheduleRecord): Promise<number | undefined> {
    const data: ScheduleJobData = { id: record.id };
    const job = await this.queue.upsertJobScheduler(
      record.id,
      { pattern: record.cron!, tz: record.timezone ?? DEFAULT_TIMEZONE },
      { name: 'cron', data, opts: this.jobOptions },
    );
    return job === undefined ? undefined : (tickOf(job.id) ?? job.timestamp + job.delay);
  }

  /** Adds the job of the run due at the record's nextAt unless one is still to run it (asked first: adding it again logs a duplicate in Redis); true when added. */
  private async addRunUnlessPending(record: ScheduleRecord, now: number): Promise<boolean> {
    if (await this.hasRunJob(record)) return false;
    await this.addRun(record, Math.max(0, record.nextAt - now));
    return true;
  }

  /** Whether job `jobId` is still to run, or running. */
  private async pending(jobId: string): Promise<boolean> {
    return !SETTLED.has(await this.queue.getJobState(jobId));
  }
}
