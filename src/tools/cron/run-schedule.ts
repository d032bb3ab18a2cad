import { parseTarget } from '../../session/target.js';
import { messageOf } from '../../errors.js';
import type { ScheduleRecord } from '../../store/store.js';
import { deliverLater } from '../deliver-later.js';
import { isTransientFailure } from '../delivery-failure.js';
import type { ToolServices } from '../tool-services.js';
import { parseCron, type CronSchedule } from './cron-expression.js';

/** After a failure worth retrying (the store, a delivery refused for now), the next try. */
export const CRON_RETRY_MS = 10_000;
/** Longest text a notice repeats: with its preamble it stays one chat message. */
const NOTICE_TEXT_CHARS = 3500;

/** Reads a stored cron expression: parseCron, unless a test of a runner asks for finer ticks. */
export type ParseCron = (expression: string, timezone?: string) => CronSchedule;

/** One run of `job` due at its `nextAt`, shared by both runners so they run it alike; false when it is to be tried again. */
export async function runSchedule(services: ToolServices, job: ScheduleRecord, now: number, parse: ParseCron = parseCron): Promise<boolean> {
  const { logger } = services;
  const log = { schedule: job.id, target: job.target, dueAt: new Date(job.nextAt).toISOString() };
  // Read again just before it goes: a job removed (or run elsewhere) since it was read stays quiet.
  const current = await services.store.schedules.get(job.id);
  if (current === undefined || current.nextAt !== job.nextAt) return true;
  try {
    await deliverLater(services.deliverer, job.origin, 'cron.run', {
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
    if (!(await notice(services, job, error))) return false;
  }
  // From this run's due time at the least: a runner whose clock is a little ahead never arms this run again.
  await services.store.schedules.advance(job.id, job.nextAt, nextRun(services, job, Math.max(now, job.nextAt), parse));
  return true;
}

/** Tells the job's origin that a run could not reach its target; false when that is worth retrying. */
async function notice(services: ToolServices, job: ScheduleRecord, failure: unknown): Promise<boolean> {
  const what = job.cron === undefined ? `Reminder ${job.id}` : `Scheduled job ${job.id}`;
  const then = job.cron === undefined ? '' : ' It stays scheduled.';
  const text = job.text.length > NOTICE_TEXT_CHARS ? `${job.text.slice(0, NOTICE_TEXT_CHARS)}…` : job.text;
  try {
    await deliverLater(services.deliverer, job.origin, 'cron.notice', {
      id: `cron:${job.id}:${job.nextAt}:notice`,
      kind: 'cron',
      text: `${what} could not be delivered to ${job.target}: ${messageOf(failure)}.${then} Its text:\n${text}`,
    });
    return true;
  } catch (error) {
    if (isTransientFailure(error)) return false;
    services.logger.error({ schedule: job.id, err: error }, 'the origin of a scheduled run cannot be told either; this run is skipped');
    return true;
  }
}

/** The run after `now`; undefined for a one-shot, or for an expression that no longer parses (logged). */
function nextRun(services: ToolServices, job: ScheduleRecord, now: number, parse: ParseCron): number | undefined {
  if (job.cron === undefined) return undefined;
  try {
    const next = parse(job.cron, job.timezone).nextAfter(now);
    if (next === undefined) services.logger.info({ schedule: job.id }, 'a cron job will not run again; removed');
    return next;
  } catch (error) {
    services.logger.error({ schedule: job.id, err: error }, 'a stored cron expression no longer parses; the job is removed');
    return undefined;
  }
}
