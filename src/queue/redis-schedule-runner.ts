import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { runDetached } from '../session/index.js';
import type { ScheduleRecord } from '../store/store.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { parseCron } from '../tools/cron/cron-expression.js';
import { CRON_RETRY_MS, runSchedule, type ParseCron } from '../tools/cron/run-schedule.js';
import type { ScheduleRunner } from '../tools/cron/schedule-runner.js';
import type { ToolServices } from '../tools/tool-services.js';
import type { Lease } from '../lease/lease.js';
import { leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import { dueJobId, scheduleJobOf } from './schedule-job.js';
import { ScheduleQueue } from './schedule-queue.js';
import { ScheduleReconcile } from './schedule-reconcile.js';

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
const RECONCILE_EVERY_MS = 30_000;

/** Thrown by a run left due (a delivery refused for now): BullMQ tries the job again after the backoff. */
class RunLater extends Error {}

/** Runs reminders and cron jobs of instances sharing Redis on BullMQ, so that each tick runs on one instance whichever is alive. */
export class RedisScheduleRunner implements ScheduleRunner {
  private readonly parse: ParseCron;
  private readonly schedules: ScheduleQueue;
  private readonly reconcile: ScheduleReconcile;
  private worker: Worker | undefined;
  private started = false;
  /** Counts starts and stops: a start that a stop overtook starts nothing more. */
  private generation = 0;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: RedisScheduleRunnerOptions) {
    this.parse = options.parseCron ?? parseCron;
    const { logger, store } = options.services;
    this.schedules = new ScheduleQueue({
      commands: options.commands,
      keys: options.keys,
      retryMs: options.retryMs ?? CRON_RETRY_MS,
      parse: this.parse,
      logger,
    });
    this.reconcile = new ScheduleReconcile({
      schedules: this.schedules,
      store: store.schedules,
      logger,
      lease: options.lease,
      everyMs: options.reconcileEveryMs ?? RECONCILE_EVERY_MS,
    });
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
    await this.reconcile.stop();
    const worker = this.worker;
    this.worker = undefined;
    const queue = this.schedules.detach();
    try {
      await worker?.close();
    } finally {
      await queue?.close();
    }
  }

  async added(record: ScheduleRecord): Promise<void> {
    try {
      await this.schedules.ensure(record, Date.now());
    } catch (error) {
      throw redisFailure(error);
    }
  }

  /** Removes its scheduler and its pending run; one left behind finds the record gone and does nothing. */
  async removed(record: ScheduleRecord): Promise<void> {
    try {
      if (record.cron !== undefined) await this.schedules.queue.removeJobScheduler(record.id);
      await this.schedules.queue.remove(dueJobId(record.id, record.nextAt));
    } catch (error) {
      this.options.services.logger.warn({ schedule: record.id, err: redisFailure(error) }, 'a removed job stays in the schedules queue; it does nothing when it runs');
    }
  }

  private async begin(generation: number): Promise<void> {
    await this.reconcile.once();
    // stop() came during the reconcile, and waits for it: what would start now would outlive it.
    if (generation !== this.generation) return;
    if (this.options.work) this.worker = this.startWorker();
    this.reconcile.start();
  }

  private startWorker(): Worker {
    const { keys } = this.options;
    const { logger } = this.options.services;
    const worker = new Worker(keys.schedulesQueue, (job: Job) => runDetached(() => this.process(job)), {
      connection: this.options.connection(),
      prefix: keys.queuePrefix,
      concurrency: this.options.concurrency ?? DEFAULT_CONCURRENCY,
      settings: { repeatStrategy: this.schedules.repeatStrategy },
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
      if (job.repeatJobKey !== undefined) await this.schedules.queue.removeJobScheduler(job.repeatJobKey);
      return;
    }
    const now = Date.now();
    const dueAt = run.dueAt ?? now;
    // Advanced past this tick: its run happened (a job run again after a lost lock, a catch-up before it).
    if (record.nextAt > dueAt) return;
    const own = record.nextAt === dueAt;
    // An earlier run still due is its own job's to run: both would deliver it.
    if (!own && (await this.schedules.hasRunJob(record))) return;
    if (await runSchedule(this.options.services, record, now, this.parse)) return;
    // Only the run's own job tries again: every later tick retrying it too would add a job per tick.
    if (own) throw new RunLater(`the run of ${record.id} is tried again`);
    // A catch-up refused for now gets a job of its own, tried after the pause rather than at the next tick.
    await this.schedules.addRun(record, this.options.retryMs ?? CRON_RETRY_MS);
  }
}
