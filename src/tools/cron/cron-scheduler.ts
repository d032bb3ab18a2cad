import { parseTarget } from '../../deliveries/target.js';
import { messageOf } from '../../errors.js';
import { runDetached } from '../../session/index.js';
import type { ScheduleRecord } from '../../store/store.js';
import { deliverLater } from '../deliver-later.js';
import { isTransientFailure } from '../delivery-failure.js';
import type { BackgroundWork, ToolServices } from '../tool-services.js';
import { parseCron } from './cron-expression.js';

/** Jobs read from the store at a time: memory stays bounded however many are due. */
const DUE_BATCH = 100;
/** After a failure worth retrying (the store, a delivery refused for now), the next try. */
export const CRON_RETRY_MS = 10_000;
/**
 * How long a claimed run is this scheduler's alone: shorter than the retry, so a run that
 * failed for now is claimed again by whichever scheduler tries next.
 */
const RUN_CLAIM_MS = CRON_RETRY_MS / 2;
/** With several instances on one store: how late a job another instance added may be seen here. */
const SHARED_STORE_POLL_MS = 5_000;
/** Longest text a notice repeats: with its preamble it stays one chat message. */
const NOTICE_TEXT_CHARS = 3500;

/**
 * Runs reminders and cron jobs when they fall due: one Clock timer armed for the earliest
 * job in the store. Each run delivers in a new trace linked to the span that created the
 * job, with its origin session entered, under the delivery id `cron:<id>:<dueAt>` so a run
 * retried after a crash is recorded once. A job due while the gateway was down runs once at
 * start, then continues from now.
 */
export class CronScheduler implements BackgroundWork {
  private started = false;
  private timer: { readonly at: number; readonly cancel: () => void } | undefined;
  private ticking: Promise<void> | undefined;
  /** Set when a job is added during a pass: the pass reads the store again before arming. */
  private rerun = false;

  constructor(private readonly services: ToolServices) {}

  /** Runs what fell due while no scheduler ran (once each), then arms the timer. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // From the root context: the runs never carry the context of whoever started the gateway.
    await runDetached(() => this.tick());
  }

  /** Cancels the timer and waits for the run under way; due jobs wait in the store for the next start. */
  async stop(): Promise<void> {
    this.started = false;
    this.disarm();
    await this.ticking;
  }

  /** A job was added, due at `at`: moves the timer earlier when it is. */
  wake(at: number): void {
    if (!this.started) return;
    if (this.ticking !== undefined) {
      this.rerun = true;
      return;
    }
    if (this.timer === undefined || at < this.timer.at) this.arm(at);
  }

  private arm(at: number): void {
    this.disarm();
    const cancel = this.services.clock.at(at, () => {
      this.timer = undefined;
      return this.tick();
    });
    this.timer = { at, cancel };
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private tick(): Promise<void> {
    if (this.ticking !== undefined) {
      this.rerun = true;
      return this.ticking;
    }
    this.disarm();
    this.ticking = this.loop().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.rerun = false;
      let wakeAt: number | undefined;
      try {
        wakeAt = await this.pass();
      } catch (error) {
        // Never the end of the loop: whatever broke is tried again later.
        this.services.logger.error({ err: error }, `the cron scheduler failed; retrying in ${CRON_RETRY_MS / 1000}s`);
        wakeAt = this.services.clock.now() + CRON_RETRY_MS;
      }
      if (!this.started) return;
      if (this.rerun) continue;
      // Sharing the store with other instances, whose new jobs wake only their own scheduler: look again soon.
      if (this.services.instance !== undefined) wakeAt = Math.min(wakeAt ?? Number.POSITIVE_INFINITY, this.services.clock.now() + SHARED_STORE_POLL_MS);
      if (wakeAt !== undefined) this.arm(wakeAt);
      return;
    }
  }

  /** Runs every job due now; returns when to wake next. */
  private async pass(): Promise<number | undefined> {
    const { schedules } = this.services.store;
    const now = this.services.clock.now();
    const seen = new Set<string>();
    let retry = false;
    try {
      for (;;) {
        const jobs = await schedules.due(now, DUE_BATCH);
        for (const job of jobs) {
          if (!this.started) return undefined;
          // A job still due after its run (advanced by nobody) waits for the retry, not a busy loop.
          if (seen.has(job.id)) retry = true;
          else if (!(await this.run(job, now))) retry = true;
          seen.add(job.id);
        }
        if (retry || jobs.length < DUE_BATCH) break;
      }
    } catch (error) {
      this.services.logger.warn({ err: error }, `the schedule store failed; retrying in ${CRON_RETRY_MS / 1000}s`);
      return now + CRON_RETRY_MS;
    }
    const next = await schedules.nextAt();
    // What is still due failed for now: tried again after a pause, not at once.
    return next !== undefined && next <= now && retry ? now + CRON_RETRY_MS : next;
  }

  /** One run of `job`; false when it is left due to be tried again. */
  private async run(job: ScheduleRecord, now: number): Promise<boolean> {
    const { logger } = this.services;
    const log = { schedule: job.id, target: job.target, dueAt: new Date(job.nextAt).toISOString() };
    // Another instance sharing the store runs this tick: it stays due here until that one advances it.
    if (!(await this.services.store.schedules.claimRun(job.id, job.nextAt, RUN_CLAIM_MS))) return false;
    try {
      await deliverLater(this.services.deliverer, job.origin, 'cron.run', {
        id: `cron:${job.id}:${job.nextAt}`,
        kind: 'cron',
        text: job.text,
        target: parseTarget(job.target),
      });
    } catch (error) {
      if (isTransientFailure(error)) {
        logger.warn({ ...log, err: error }, `a scheduled run could not be delivered for now; retrying in ${CRON_RETRY_MS / 1000}s`);
        return false;
      }
      logger.warn({ ...log, err: error }, 'a scheduled run could not reach its target; telling its origin');
      if (!(await this.notice(job, error))) return false;
    }
    await this.services.store.schedules.advance(job.id, job.nextAt, this.nextRun(job, now));
    return true;
  }

  /** Tells the job's origin that a run could not reach its target; false when that is worth retrying. */
  private async notice(job: ScheduleRecord, failure: unknown): Promise<boolean> {
    const what = job.cron === undefined ? `Reminder ${job.id}` : `Scheduled job ${job.id}`;
    const then = job.cron === undefined ? '' : ' It stays scheduled.';
    const text = job.text.length > NOTICE_TEXT_CHARS ? `${job.text.slice(0, NOTICE_TEXT_CHARS)}…` : job.text;
    try {
      await deliverLater(this.services.deliverer, job.origin, 'cron.notice', {
        id: `cron:${job.id}:${job.nextAt}:notice`,
        kind: 'cron',
        text: `${what} could not be delivered to ${job.target}: ${messageOf(failure)}.${then} Its text:\n${text}`,
      });
      return true;
    } catch (error) {
      if (isTransientFailure(error)) return false;
      this.services.logger.error({ schedule: job.id, err: error }, 'the origin of a scheduled run cannot be told either; this run is skipped');
      return true;
    }
  }

  /** The run after `now`; undefined for a one-shot, or for an expression that no longer parses (logged). */
  private nextRun(job: ScheduleRecord, now: number): number | undefined {
    if (job.cron === undefined) return undefined;
    try {
      const next = parseCron(job.cron, job.timezone).nextAfter(now);
      if (next === undefined) this.services.logger.info({ schedule: job.id }, 'a cron job will not run again; removed');
      return next;
    } catch (error) {
      this.services.logger.error({ schedule: job.id, err: error }, 'a stored cron expression no longer parses; the job is removed');
      return undefined;
    }
  }
}
