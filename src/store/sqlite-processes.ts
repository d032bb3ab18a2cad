import type Database from 'better-sqlite3';
import { cappedInsert } from './sqlite-capped-insert.js';
import { preparer } from './sqlite-database.js';
import { destinationMatches, originMatches, type OverdueParameters } from './sqlite-overdue-filters.js';

/** A processes row; named parameters of its INSERT too. */
export interface ProcessRow {
  id: string;
  origin: string;
  destination: string;
  command: string;
  pid: number;
  started_at: number;
  notify_on_complete: number;
  check_interval_ms: number | null;
  progress_sent: number;
  ended_at: number | null;
  exit_code: number | null;
  exit_signal: string | null;
  exit_note: string | null;
}

/** An ended process whose end was not reported, with its completion notice's state (all null when there is none). */
export interface UnreportedProcessRow extends ProcessRow {
  notice_status: string | null;
  notice_kind: string | null;
  notice_destination: string | null;
  notice_origin: string | null;
  notice_attempts: number | null;
  notice_attempts_since: number | null;
  notice_due_at: number | null;
  notice_lease_until: number | null;
  notice_last_error: string | null;
  notice_finished_at: number | null;
}

const PROCESS_COLUMNS = `id, origin, destination, command, pid, started_at, notify_on_complete, check_interval_ms, progress_sent, ended_at, exit_code, exit_signal, exit_note`;
/** A process that asked to be told of its end and ended before @before: its notice is due. */
export const UNREPORTED_PROCESS = `processes.notify_on_complete = 1 AND processes.ended_at < @before`;
/** Longest exit note kept: it explains an end, it is not the command's output. */
const MAX_EXIT_NOTE = 1000;

/** The statements of the background processes the terminal tool started. */
export function processOperations(db: Database.Database) {
  const statement = preparer(db);
  const addProcess = cappedInsert<ProcessRow>(db, 'processes', PROCESS_COLUMNS);
  const getProcess = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes WHERE id = ?`);
  const allProcesses = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes ORDER BY rowid`);
  const processesOf = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes WHERE destination = ? ORDER BY rowid`);
  const processEnded = statement(`UPDATE processes SET ended_at = ?, exit_code = ?, exit_signal = ?, exit_note = ? WHERE id = ?`);
  const processProgressed = statement(`UPDATE processes SET progress_sent = ? WHERE id = ?`);
  const removeProcess = statement(`DELETE FROM processes WHERE id = ?`);
  // Its notice looked up by id: one row at most, recorded but not done, or none at all.
  const unreportedProcesses = statement<UnreportedProcessRow>(
    `SELECT ${PROCESS_COLUMNS.split(', ').map((column) => `processes.${column}`).join(', ')},
       notice.status AS notice_status, notice.kind AS notice_kind, notice.destination AS notice_destination, notice.origin AS notice_origin,
       notice.attempts AS notice_attempts, notice.attempts_since AS notice_attempts_since, notice.due_at AS notice_due_at,
       notice.lease_until AS notice_lease_until, notice.last_error AS notice_last_error, notice.finished_at AS notice_finished_at
     FROM processes LEFT JOIN deliveries AS notice ON notice.id = 'proc:' || processes.id || ':done'
     WHERE ${UNREPORTED_PROCESS} AND (notice.status IS NULL OR notice.status <> 'done')
       AND (@filtered = 0 OR ${destinationMatches('processes.destination')} OR ${originMatches('processes.origin')})
     ORDER BY processes.ended_at DESC, processes.id DESC LIMIT @limit`,
  );

  return {
    /** Adds a background process unless a cap refuses it; a duplicate id fails the call. */
    addProcess,
    getProcess: (id: string): ProcessRow | undefined => getProcess.get(id),
    allProcesses: (): ProcessRow[] => allProcesses.all(),
    processesOf: (destination: string): ProcessRow[] => processesOf.all(destination),
    processEnded(id: string, endedAt: number, code: number | null, signal: string | null, note: string | null): void {
      processEnded.run(endedAt, code, signal, note?.slice(0, MAX_EXIT_NOTE) ?? null, id);
    },
    processProgressed(id: string, progressSent: number): void {
      processProgressed.run(progressSent, id);
    },
    removeProcess(id: string): void {
      removeProcess.run(id);
    },
    /** Ended processes to report, ended before `before`, whose notice is not done; latest end first. */
    unreportedProcesses: (parameters: OverdueParameters): UnreportedProcessRow[] => unreportedProcesses.all(parameters),
  };
}
