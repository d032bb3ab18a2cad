import { Queue, UnrecoverableError, Worker, type Job, type JobsOptions, type RepeatStrategy } from 'bullmq';
import type { Redis } from 'ioredis';
import { runDetached } from '../session/index.js';
import type { ScheduleRecord } from '../store/store.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { DEFAULT_TIMEZONE, parseCron } from '../tools/cron/cron-expression.js';
import { CRON_RETRY_MS, runSchedule, type ParseCron } from '../tools/cron/run-schedule.js';
import type { ScheduleRunner } from '../tools/cron/schedule-runner.js';
import type { ToolServices } from '../tools/tool-services.js';
import type { Lease } from '../lease/lease.js';
import { keptAWeek, leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import { dueJobId, scheduleJobOf, tickJobId, tickOf, type ScheduleJobData } from './schedule-job.js';

export interface RedisScheduleRunnerOptions extends LeaseTimings {
  /** The tools' services: the store whose records are the truth, the deliverer, the logger. */
  readonly services: ToolServices;
  /** The commands' connection, which fails fast while Redis is away: the queue's. Shared, never closed here. */
  readonly commands: Redis;
  /** A new connection for the worker (`maxRetriesPerRequest: null`); its maker closes it. */
  readonly connection: () => Redis;
  readonly keys: RedisKeys;
  /** THREADLINE_WORKERS includes turns: this instance runs the jobs; otherwise it only adds and removes them. */
  readonly work: boolean;
  /** Runs at once on this instance; default 2. */
  readonly concurrency?: number;
  /** The pause before a run refused for now is tried again; default CRON_RETRY_MS. */
  readonly retryMs?: number;
  /** Reads a record's cron expression; default parseCron. */
  readonly parseCron?: ParseCron;
  /**
   * A new lease each start: while this instance holds it, it matches the queue to the store every
   * `reconcileEveryMs`, so what broke since the start is repaired. None: only at start.
   */
  readonly lease?: () => Lease;
  /** How often the lease's holder reconciles; default RECONCILE_EVERY_MS. */
  readonly reconcileEveryMs?: number;
}

const DEFAULT_CONCURRENCY = 2;
/** A run refused for now is tried again until it goes, as the embedded scheduler does: no end in practice. */
const RETRY_ATTEMPTS = 1_000_000;
/** Records reconciled at once: a few round trips in flight, not thousands. */
const RECONCILE_BATCH = 50;
const RECONCILE_EVERY_MS = 30_000;
/** A job in one of these has run or never will: it holds no run of its own. */
const SETTLED = new Set(['completed', 'failed', 'unknown']);

/** Thrown by a run left due (a delivery refused for now): BullMQ tries the job again after the backoff. */
class RunLater extends Error {}

/** Runs reminders and cron jobs of instances sharing Redis on BullMQ, so that each tick runs on one instance whichever is alive. */
export class RedisScheduleRunner implements ScheduleRunner {
  private readonly parse: ParseCron;
  private readonly repeatStrategy: RepeatStrategy;
  private readonly jobOptions: JobsOptions;
  private queueInstance: Queue | undefined;
  private worker: Worker | undefined;
  private started = false;
  /** Counts starts and stops: a start that a stop overtook starts nothing more. */
  private generation = 0;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private lease: Lease | undefined;
  private leading = false;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling: Promise<void> | undefined;

  constructor(private readonly options: RedisScheduleRunnerOptions) {
    const parse = options.parseCron ?? parseCron;
    this.parse = parse;
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
      backoff: { type: 'fixed', delay: options.retryMs ?? CRON_RETRY_MS },
      removeOnComplete: true,
      removeOnFail: keptAWeek(1_000),
      // Each failed attempt would otherwise add its stack to the job in Redis, for as long as the run is refused.
      stackTraceLimit: 1,
    };
  }

  /** Gives every stored record its scheduler or job (records added before, or while no instance ran), then works the queue. */
  start(): Promise<void> {
    if (this.started) return this.starting ?? Promise.resolve();
    this.started = true;
    const generation = ++this.generation;
    // After a stop under way: it must not close what this start opens.
    this.starting = (this.stopping ?? Promise.resolve()).then(() => this.begin(generation));
    return this.starting;
  }

  /** Closes the worker once its runs under way end; the jobs wait in Redis for any instance. */
  stop(): Promise<void> {
    const stopping = this.end().finally(() => {
      if (this.stopping === stopping) this.stopping = undefined;
    });
    this.stopping = stopping;
    return stopping;
  }

  private async end(): Promise<void> {
    this.started = false;
    this.generation++;
    // A start under way is let finish its reconcile, and starts nothing after it.
    await this.starting;
    this.starting = undefined;
    const lease = this.lease;
    this.lease = undefined;
    // Its onLost ends the reconciling, when this instance held it.
    await lease?.stop();
    this.leading = false;
    clearTimeout(this.reconcileTimer);
    await this.reconciling;
    const worker = this.worker;
    this.worker = undefined;
    const queue = this.queueInstance;
    this.queueInstance = undefined;
    try {
      await worker?.close();
    } finally {
      await queue?.close();
    }
  }

  async added(record: ScheduleRecord): Promise<void> {
    try {
      await this.ensure(record, Date.now());
    } catch (error) {
      throw redisFailure(error);
    }
  }

  /** Removes its scheduler and its pending run; one left behind finds the record gone and does nothing. */
  async removed(record: ScheduleRecord): Promise<void> {
    try {
      if (record.cron !== undefined) await this.queue.removeJobScheduler(record.id);
      await this.queue.remove(dueJobId(record.id, record.nextAt));
    } catch (error) {
      this.options.services.logger.warn({ schedule: record.id, err: redisFailure(error) }, 'a removed job stays in the schedules queue; it does nothing when it runs');
    }
  }

  private async begin(generation: number): Promise<void> {
    await this.reconcileLogged();
    // stop() came during the reconcile, and waits for it: what would start now would outlive it.
    if (generation !== this.generation) return;
    if (this.options.work) this.worker = this.startWorker();
    const lease = this.options.lease?.();
    if (lease === undefined) return;
    this.lease = lease;
    lease.start({
      onAcquired: () => {
        this.leading = true;
        this.reconcileLater();
      },
      onLost: async () => {
        this.leading = false;
        clearTimeout(this.reconcileTimer);
        await this.reconciling;
      },
    });
  }

  private reconcileLater(): void {
    clearTimeout(this.reconcileTimer);
    this.reconcileTimer = setTimeout(() => {
      this.reconciling = this.reconcileLogged().finally(() => {
        this.reconciling = undefined;
        if (this.leading) this.reconcileLater();
      });
    }, this.options.reconcileEveryMs ?? RECONCILE_EVERY_MS);
  }

  /** A reconcile that never throws: what it could not do waits for the next one. */
  private async reconcileLogged(): Promise<void> {
    try {
      await runDetached(() => this.reconcile());
    } catch (error) {
      this.options.services.logger.error({ err: redisFailure(error) }, 'could not match the schedules queue to the stored jobs; tried again at the next reconcile');
    }
  }

  /** Every stored record gets its scheduler or job; a scheduler whose record is gone is removed. */
  private async reconcile(): Promise<void> {
    const { schedules } = this.options.services.store;
    const { logger } = this.options.services;
    // Before the records: a scheduler missing here but added since is looked up again by ensure().
    const schedulers = new Map((await this.queue.getJobSchedulers()).map((scheduler) => [scheduler.key, scheduler.next]));
    const records = await schedules.all();
    const now = Date.now();
    for (let start = 0; start < records.length; start += RECONCILE_BATCH) {
      await Promise.all(
        records.slice(start, start + RECONCILE_BATCH).map((record) =>
          this.ensure(record, now, schedulers).catch((error: unknown) => {
            logger.error({ schedule: record.id, err: redisFailure(error) }, 'a stored job could not be scheduled; retried at the next reconcile');
          }),
        ),
      );
    }
    const stored = new Set(records.map((record) => record.id));
    for (const key of schedulers.keys()) {
      // Read again: a job added since the records were read has its scheduler already.
      if (stored.has(key) || (await schedules.get(key)) !== undefined) continue;
      await this.queue.removeJobScheduler(key);
    }
  }

  /** Makes sure `record` runs, idempotently, so that instances doing it at once add each job once. */
  private async ensure(record: ScheduleRecord, now: number, schedulers?: ReadonlyMap<string, number | undefined>): Promise<void> {
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
      this.options.services.logger.error(
        { schedule: record.id, cron: record.cron, timezone: record.timezone },
        'a stored cron expression gives no next run (it no longer parses); the job runs once more, which removes it',
      );
    }
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

  /** Adds the job of the run due at the record's nextAt, to run in `delayMs`; a second add of it is a no-op. */
  private async addRun(record: ScheduleRecord, delayMs: number): Promise<void> {
    const data: ScheduleJobData = { id: record.id, dueAt: record.nextAt };
    await this.queue.add('run', data, { ...this.jobOptions, jobId: dueJobId(record.id, record.nextAt), delay: delayMs });
  }

  /** Whether job `jobId` is still to run, or running. */
  private async pending(jobId: string): Promise<boolean> {
    return !SETTLED.has(await this.queue.getJobState(jobId));
  }

  private startWorker(): Worker {
    const { keys } = this.options;
    const { logger } = this.options.services;
    const worker = new Worker(keys.schedulesQueue, (job: Job) => runDetached(() => this.process(job)), {
      connection: this.options.connection(),
      prefix: keys.queuePrefix,
      concurrency: this.options.concurrency ?? DEFAULT_CONCURRENCY,
      settings: { repeatStrategy: this.repeatStrategy },
      ...leaseWorkerOptions(this.options),
    });
    logWorkerErrors(worker, logger, 'schedules');
    const retrySeconds = (this.options.retryMs ?? CRON_RETRY_MS) / 1000;
    worker.on('failed', (job, error) => {
      if (job === undefined || error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1)) {
        logger.error({ err: error, job: job?.id }, 'a scheduled run was given up; it stays a failed job in the schedules queue');
      } else if (!(error instanceof RunLater)) {
        // A delivery refused for now was logged by runSchedule; the store failing is said here.
        logger.warn({ err: redisFailure(error), job: job.id }, `a scheduled run failed in the store; retrying in ${retrySeconds}s`);
      }
    });
    return worker;
  }

  /** One job: the run of its record, when the record still exists and this run has not happened. */
  private async process(job: Job): Promise<void> {
    const run = scheduleJobOf(job);
    if (run === undefined) throw new UnrecoverableError('the job names no schedule: its data has no record id');
    const record = await this.options.services.store.schedules.get(run.id);
    if (record === undefined) {
      // Removed: a scheduler left behind (its removal failed, or raced a tick) goes now.
      if (job.repeatJobKey !== undefined) await this.queue.removeJobScheduler(job.repeatJobKey);
      return;
    }
    const now = Date.now();
    const dueAt = run.dueAt ?? now;
    // Advanced past this tick: its run happened (a job run again after a lost lock, a catch-up before it).
    if (record.nextAt > dueAt) return;
    const own = record.nextAt === dueAt;
    // An earlier run still due is its own job's to run: both would deliver it.
    if (!own && (await this.hasRunJob(record))) return;
    if (await runSchedule(this.options.services, record, now, this.parse)) return;
    // Only the run's own job tries again: every later tick retrying it too would add a job per tick.
    if (own) throw new RunLater(`the run of ${record.id} is tried again`);
    // A catch-up refused for now gets a job of its own, tried after the pause rather than at the next tick.
    await this.addRun(record, this.options.retryMs ?? CRON_RETRY_MS);
  }

  /** Whether the run due at the record's nextAt has a job of its own still to run. */
  private async hasRunJob(record: ScheduleRecord): Promise<boolean> {
    const [due, tick] = await Promise.all([this.pending(dueJobId(record.id, record.nextAt)), this.pending(tickJobId(record.id, record.nextAt))]);
    return due || tick;
  }

  /** The queue, made on first use: a tool may add a job before start(). */
  private get queue(): Queue {
    if (this.queueInstance === undefined) {
      const queue = new Queue(this.options.keys.schedulesQueue, {
        connection: this.options.commands,
        prefix: this.options.keys.queuePrefix,
        settings: { repeatStrategy: this.repeatStrategy },
      });
      // Its failures reach the caller of each command; an outage is logged once, by the connection's owner.
      queue.on('error', () => undefined);
      this.queueInstance = queue;
    }
    return this.queueInstance;
  }
}
