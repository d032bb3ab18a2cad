import { Cron, CronPattern } from 'croner';
import { ThreadlineError, messageOf } from '../../errors.js';

/** The time zone of a job that names none. */
export const DEFAULT_TIMEZONE = 'UTC';

/** Only 5 (minute first) or 6 (second first) fields: croner's 7th (years) is not offered. */
const MODE = '5-or-6-parts';

/**
 * A cron expression read once: when it runs next. Croner only parses and computes here; its
 * own timers are never started (time comes from the Clock, so tests control it).
 */
export interface CronSchedule {
  /** The first run strictly after `after` (ms since the epoch), or undefined when it never runs again. */
  nextAfter(after: number): number | undefined;
}

/**
 * The IANA time zone `name` as the runtime spells it (`europe/berlin` → `Europe/Berlin`), or
 * TL_TOOL_INPUT when the runtime does not know it.
 */
export function checkTimezone(name: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw new ThreadlineError('TL_TOOL_INPUT', `"${name.slice(0, 64)}" is not an IANA time zone (such as UTC, Europe/Berlin, America/New_York)`);
  }
}

/**
 * Parses `expression` in `timezone` (default UTC). Throws TL_TOOL_INPUT with croner's reason
 * for an expression it refuses, and for one that would run more than once a minute.
 */
export function parseCron(expression: string, timezone: string = DEFAULT_TIMEZONE): CronSchedule {
  const cron = readCron(expression, timezone);
  // Croner also takes a date as a one-off job; a one-shot here is a delay.
  if (cron.getPattern() === undefined) {
    throw new ThreadlineError('TL_TOOL_INPUT', `"${expression.slice(0, 80)}" is a date, not a cron expression; for one run use a delay`);
  }
  // Parsed again only to read its fields: croner accepted it just above.
  const pattern = new CronPattern(expression, timezone, { mode: MODE });
  // Several seconds of a minute means every run that minute repeats within it.
  if (pattern.second.filter((set) => set !== 0).length > 1) {
    throw new ThreadlineError(
      'TL_TOOL_INPUT',
      `"${expression.slice(0, 80)}" runs more than once a minute; the finest schedule is once a minute ("* * * * *")`,
    );
  }
  return scheduleOf(cron);
}

/**
 * Croner's ticks of `expression` without parseCron's floor of once a minute, for a runner's
 * tests that need ticks a second apart; every expression a user gives goes through parseCron.
 */
export function cronTicksUnchecked(expression: string, timezone: string = DEFAULT_TIMEZONE): CronSchedule {
  return scheduleOf(readCron(expression, timezone));
}

function readCron(expression: string, timezone: string): Cron {
  try {
    return new Cron(expression, { paused: true, timezone, mode: MODE });
  } catch (error) {
    throw new ThreadlineError('TL_TOOL_INPUT', `"${expression.slice(0, 80)}" is not a cron expression: ${messageOf(error)}`);
  }
}

function scheduleOf(cron: Cron): CronSchedule {
  return {
    nextAfter(after) {
      return cron.nextRun(new Date(after))?.getTime();
    },
  };
}
