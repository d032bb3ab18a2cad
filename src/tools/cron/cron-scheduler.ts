import { runDetached } from '../../session/index.js';
import type { ScheduleRecord } from '../../store/store.js';
import type { ToolServices } from '../tool-services.js';
import { CRON_RETRY_MS, runSchedule } from './run-schedule.js';
import type { ScheduleRunner } from './schedule-runner.js';

/** Jobs read from the store at a time: memory stays bounded however many are due. */
const DUE_BATCH = 100;

/**
 * Runs reminders and cron jobs of one gateway when they fall due: one Clock timer armed for
 * the earliest job in the store, each run as runSchedule makes it. A job due while the gateway
 * was down runs once at start, then continues from now. The store is this gateway's alone:
 * with several instances on Redis, BullMQ runs the jobs instead (RedisScheduleRunner).
 */
export class CronScheduler implements ScheduleRunner {
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

  /** Moves the timer earlier when the new job is due sooner. */
  async added(record: ScheduleRecord): Promise<void> {
    this.wake(record.nextAt);
  }

  /** Nothing to do: the timer finds the store without the job. */
  async removed(): Promise<void> {}

  /** A job is due at `at`: moves the timer earlier when it is. */
  private wake(at: number): void {
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
          else if (!(await runSchedule(this.services, job, now))) retry = true;
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
}
