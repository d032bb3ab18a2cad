import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker, type Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { runDetached } from '../session/index.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import { keptAWeek, leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import type { Slots } from './slots.js';

/** Drain jobs failed (a Redis error mid-claim; the sweep gives their mailbox a new one): kept a week, bounded. */
const REMOVE_ON_FAIL = keptAWeek(1_000);
/** After a Redis error, how long the fetch loop waits before it fetches again: BullMQ's default. */
const DEFAULT_RETRY_DELAY_MS = 15_000;
/** How long a fetched job waits here for a slot that work arriving at once took: then it goes back for another instance. */
const SLOT_WAIT_MS = 1_000;
/** BullMQ's lock duration: a fetched job's lock is not extended, so its wait for a slot stays well inside it. */
const DEFAULT_LOCK_MS = 30_000;

export interface DrainJobsOptions extends LeaseTimings {
  /** The BullMQ queue of drain jobs (`turns`, `deliveries`) and its prefix. */
  readonly queue: string;
  readonly prefix: string;
  /** A connection of its own (BullMQ blocks on it while waiting for a job); closed by close(). */
  readonly connection: Redis;
  /** This instance's slots: a job is fetched only while one is free. */
  readonly slots: Slots;
  readonly logger: Logger;
  /** Names the queue in logs. */
  readonly what: string;
  /** After a Redis error, how long to wait before fetching again; default 15 s. */
  readonly retryDelayMs?: number | undefined;
}

/**
 * What takes drain jobs from a BullMQ queue on this instance: one job at a time, and only
 * while a slot is free here, so a job never waits on an instance whose slots are full while
 * another has room. BullMQ's manual fetch (`getNextJob`), with its stalled check on. A job is
 * only a wake-up: `take(key)`, given the slot, claims the mailbox and drains it in the
 * background; the job completes as soon as `take` returns.
 */
export class DrainJobs {
  private readonly worker: Worker;
  private readonly instance = randomUUID();
  private fetches = 0;
  private loop: Promise<void> | undefined;
  /** Jobs being taken: close() waits for them. */
  private readonly running = new Set<Promise<void>>();
  private stopped = false;
  /** Aborted by close(): a wait after a Redis error ends at once. */
  private readonly closing = new AbortController();

  constructor(private readonly options: DrainJobsOptions) {
    this.worker = new Worker(options.queue, undefined, {
      connection: options.connection,
      prefix: options.prefix,
      autorun: false,
      ...leaseWorkerOptions(options),
    });
    logWorkerErrors(this.worker, options.logger, options.what);
  }

  /** Starts fetching: `take(key)` runs with a slot taken for it, and gives it back (now or once its drain ends). */
  async start(take: (key: string) => Promise<void>): Promise<void> {
    await this.worker.startStalledCheckTimer();
    // Detached: the loop runs for the instance's life, in no message's context.
    this.loop = runDetached(() => this.fetchLoop(take));
  }

  /** Fetches no more jobs (one fetched from now on is handed back, for another instance). */
  stopFetching(): void {
    this.stopped = true;
  }

  /** Stops fetching and closes the worker; a job fetched but not yet taken is handed back. */
  async close(): Promise<void> {
    this.stopped = true;
    this.closing.abort();
    await this.settled();
    // Forced: cuts the blocking fetch off at once (unforced, it waits out its timeout, seconds); our jobs are settled already.
    // A job that fetch brought back after all is handed back by run(), or requeued by the stalled check.
    await this.worker.close(true).catch(() => undefined);
    await this.loop;
    await this.settled();
  }

  private async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async fetchLoop(take: (key: string) => Promise<void>): Promise<void> {
    const { slots } = this.options;
    while (!this.stopped) {
      await slots.whenFree();
      if (this.stopped) return;
      const token = `${this.instance}:${this.fetches++}`;
      let job: Job | undefined;
      try {
        job = await this.worker.getNextJob(token);
      } catch (error) {
        if (this.stopped) return;
        this.options.logger.warn({ err: redisFailure(error), queue: this.options.queue }, `${this.options.what} could not fetch a drain job; trying again`);
        await sleep(this.options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, undefined, { signal: this.closing.signal }).catch(() => undefined);
        continue;
      }
      if (job === undefined) continue;
      // Not awaited: the next job is fetched while this one is claimed and completed, so a wave of freed slots fills at once.
      const running = this.run(job, token, take);
      this.running.add(running);
      void running.finally(() => this.running.delete(running));
    }
  }

  /** Takes a slot and hands the job's key to `take`; with none free within a moment, the job goes back for another instance. */
  private async run(job: Job, token: string, take: (key: string) => Promise<void>): Promise<void> {
    try {
      const key = drainKeyOf(job.data);
      // A slot taken meanwhile by work that arrived here: the job waits in line for the next one (new work does not overtake it), a moment.
      const waitMs = Math.min(SLOT_WAIT_MS, Math.floor((this.options.lockDurationMs ?? DEFAULT_LOCK_MS) / 4));
      if (this.stopped || !(await this.options.slots.takeWithin(waitMs))) {
        await job.moveToWait(token);
        return;
      }
      await take(key);
      await job.moveToCompleted(undefined, token, false);
    } catch (error) {
      // The mailbox keeps its messages: a sweep gives it a drain job again.
      this.options.logger.warn({ err: redisFailure(error), queue: this.options.queue, job: job.id }, 'a drain job failed; its mailbox gets a new one at the next sweep');
      await job.moveToFailed(error instanceof Error ? error : new Error(String(error)), token, false).catch(() => undefined);
    }
  }
}

/** A drain job: only the key of the mailbox it wakes; the messages wait in the mailbox. */
interface DrainJobData {
  readonly key: string;
}

/**
 * Adds the drain job of mailbox `key` to `queue` (due in `delayMs`): nothing when one waits, its
 * successor when one runs (BullMQ's deduplication, `keepLastIfActive`).
 */
export async function addDrainJob(queue: Queue, key: string, delayMs = 0): Promise<void> {
  const data: DrainJobData = { key };
  await queue.add('drain', data, {
    ...(delayMs > 0 ? { delay: delayMs } : {}),
    deduplication: { id: key, keepLastIfActive: true },
    attempts: 1,
    removeOnComplete: true,
    removeOnFail: REMOVE_ON_FAIL,
  });
}

/** The key a drain job wakes; throws for data that is not a drain job's. */
export function drainKeyOf(data: unknown): string {
  const key = (data as Partial<DrainJobData> | null)?.key;
  if (typeof key !== 'string' || key === '') throw new Error('a drain job without its mailbox key');
  return key;
}
