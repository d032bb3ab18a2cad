import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

/** A history row as written (without its `seq`) and read back. */
export interface HistoryRow {
  role: string;
  text: string;
  source: string | null;
  extra: string | null;
  at: number;
}

const HISTORY_COLUMNS = `role, text, source, extra, at`;

/** The statements of each session's history, and of the entries every session of a destination sees. */
export function historyOperations(db: Database.Database) {
  const statement = preparer(db);
  const appendHistory = statement(
    `INSERT INTO history (session_id, destination, role, text, source, extra, at) VALUES (@session_id, @destination, @role, @text, @source, @extra, @at)`,
  );
  // Everything up to the `keep`+1-th newest goes; each query names its partial index's condition.
  const trimSession = statement(
    `DELETE FROM history WHERE session_id = @session_id AND seq <= (
       SELECT seq FROM history WHERE session_id = @session_id ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
  );
  const trimMirrored = statement(
    `DELETE FROM history WHERE session_id IS NULL AND destination = @destination AND seq <= (
       SELECT seq FROM history WHERE session_id IS NULL AND destination = @destination ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
  );
  const recentHistory = statement<HistoryRow>(
    `SELECT ${HISTORY_COLUMNS} FROM (
       SELECT seq, ${HISTORY_COLUMNS} FROM (SELECT seq, ${HISTORY_COLUMNS} FROM history WHERE session_id = @session_id ORDER BY seq DESC LIMIT @limit)
       UNION ALL
       SELECT seq, ${HISTORY_COLUMNS} FROM (
         SELECT seq, ${HISTORY_COLUMNS} FROM history WHERE session_id IS NULL AND destination = @destination ORDER BY seq DESC LIMIT @limit)
       ORDER BY seq DESC LIMIT @limit)
     ORDER BY seq`,
  );

  return {
    /** Appends a session's entries in order and keeps its newest `keep`. */
    appendHistory(sessionId: string, destination: string, entries: readonly HistoryRow[], keep: number): void {
      for (const entry of entries) appendHistory.run({ session_id: sessionId, destination, ...entry });
      trimSession.run({ session_id: sessionId, keep });
    },
    /** Stores an entry every session of the destination sees, and keeps the destination's newest `keep` of them. */
    mirrorHistory(destination: string, entry: HistoryRow, keep: number): void {
      appendHistory.run({ session_id: null, destination, ...entry });
      trimMirrored.run({ destination, keep });
    },
    /** The newest `limit` of the session's entries and the destination's mirrored ones, oldest first. */
    recentHistory: (sessionId: string, destination: string, limit: number): HistoryRow[] =>
      recentHistory.all({ session_id: sessionId, destination, limit }),
  };
}
