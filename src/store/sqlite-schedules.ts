import type Database from 'better-sqlite3';
import { cappedInsert } from './sqlite-capped-insert.js';
import { preparer } from './sqlite-database.js';
import { destinationMatches, originMatches, type OverdueParameters } from './sqlite-overdue-filters.js';

/** A schedules row; named parameters of its INSERT too. */
export interface ScheduleRow {
  id: string;
  origin: string;
  destination: string;
  target: string;
  text: string;
  cron: string | null;
  timezone: string | null;
  next_at: number;
  created_at: number;
}

const SCHEDULE_COLUMNS = `id, origin, destination, target, text, cron, timezone, next_at, created_at`;

/** The statements of reminders and cron jobs. */
export function scheduleOperations(db: Database.Database) {
  const statement = preparer(db);
  const addSchedule = cappedInsert<ScheduleRow>(db, 'schedules', SCHEDULE_COLUMNS);
  const dueSchedules = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE next_at <= ? ORDER BY next_at, id LIMIT ?`);
  const nextScheduleAt = statement<{ at: number | null }>(`SELECT MIN(next_at) AS at FROM schedules`);
  const allSchedules = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules ORDER BY next_at, id`);
  const schedulesOf = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE destination = ? ORDER BY next_at, id`);
  const getSchedule = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = ?`);
  // Compare-and-set on next_at: of two runners of the same run, only the first moves it.
  const rescheduled = statement(`UPDATE schedules SET next_at = ? WHERE id = ? AND next_at = ?`);
  const finishedSchedule = statement(`DELETE FROM schedules WHERE id = ? AND next_at = ?`);
  const removeSchedule = statement(`DELETE FROM schedules WHERE id = ?`);
  // A run's destination: the origin's chat (the destination column), an explicit target, or the
  // home channel of the target's platform (the origin's for a bare `home`, unless a damaged
  // origin is not JSON: json_extract would fail the whole read), joined by its key.
  const homeTarget = `(substr(schedules.target, 1, 5) = 'home:' AND instr(substr(schedules.target, 6), ':') = 0)`;
  const explicitTarget = `(CASE WHEN schedules.target <> 'origin' AND schedules.target <> 'home' AND NOT ${homeTarget} THEN schedules.target END)`;
  const overdueSchedules = statement<ScheduleRow>(
    `SELECT ${SCHEDULE_COLUMNS.split(', ').map((column) => `schedules.${column}`).join(', ')}
     FROM schedules LEFT JOIN homes ON @filtered = 1 AND homes.platform = (CASE WHEN schedules.target = 'home' AND json_valid(schedules.origin)
       THEN json_extract(schedules.origin, '$.session.platform') WHEN ${homeTarget} THEN substr(schedules.target, 6) END)
     WHERE schedules.next_at < @before
       AND (@filtered = 0 OR ${destinationMatches('schedules.destination')} OR ${destinationMatches(explicitTarget)}
         OR ${destinationMatches('homes.destination')} OR ${originMatches('schedules.origin')})
     ORDER BY schedules.next_at DESC, schedules.id DESC LIMIT @limit`,
  );

  return {
    /** Adds a reminder or cron job unless a cap refuses it; a duplicate id fails the call. */
    addSchedule,
    dueSchedules: (now: number, limit: number): ScheduleRow[] => dueSchedules.all(now, limit),
    nextScheduleAt: (): number | undefined => nextScheduleAt.get()?.at ?? undefined,
    allSchedules: (): ScheduleRow[] => allSchedules.all(),
    schedulesOf: (destination: string): ScheduleRow[] => schedulesOf.all(destination),
    getSchedule: (id: string): ScheduleRow | undefined => getSchedule.get(id),
    /** Due again at `nextAt`, or removed when null, if still due at `ranAt`; true when it changed. */
    advanceSchedule: (id: string, ranAt: number, nextAt: number | null): boolean =>
      (nextAt === null ? finishedSchedule.run(id, ranAt) : rescheduled.run(nextAt, id, ranAt)).changes === 1,
    removeSchedule: (id: string): boolean => removeSchedule.run(id).changes === 1,
    /** Schedules due before `before` (their run has not happened), latest due first. */
    overdueSchedules: (parameters: OverdueParameters): ScheduleRow[] => overdueSchedules.all(parameters),
  };
}
