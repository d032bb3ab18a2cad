import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';
import type { Retention } from './retention.js';

/**
 * Finished deliveries and expired intake keys deleted per prune: a day's worth in one DELETE
 * would hold the event loop for as long as it takes. A prune runs once a second, or every
 * 10 ms while the last batch was full.
 */
export const PRUNE_BATCH = 1_000;
const PRUNE_INTERVAL_MS = 1_000;
const PRUNE_BACKLOG_INTERVAL_MS = 10;

/** History entries older than this are pruned: a session not seen for a month starts afresh. */
export const HISTORY_RETENTION_MS = 30 * 24 * 3600_000;

/** Deletes a batch of what outlived its retention, at most once an interval; called in the caller's transaction. */
export type Prune = (now: number) => void;

export function pruner(db: Database.Database, retention: Retention): Prune {
  const statement = preparer(db);
  // Literal statuses: each DELETE then reads its own partial index by age.
  const pruneDone = statement(
    `DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE status = 'done' AND finished_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  const pruneFailed = statement(
    `DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE status = 'failed' AND finished_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  const pruneKeys = statement(`DELETE FROM intake_keys WHERE key IN (SELECT key FROM intake_keys WHERE expires_at <= ? LIMIT ${PRUNE_BATCH})`);
  const pruneHistory = statement(`DELETE FROM history WHERE seq IN (SELECT seq FROM history WHERE at < ? LIMIT ${PRUNE_BATCH})`);
  const historyMs = retention.historyMs ?? HISTORY_RETENTION_MS;
  let nextPrune = 0;
  return (now) => {
    if (now < nextPrune) return;
    const deleted = [
      pruneDone.run(now - retention.doneMs).changes,
      pruneFailed.run(now - retention.failedMs).changes,
      pruneKeys.run(now).changes,
      pruneHistory.run(now - historyMs).changes,
    ];
    nextPrune = now + (deleted.some((n) => n === PRUNE_BATCH) ? PRUNE_BACKLOG_INTERVAL_MS : PRUNE_INTERVAL_MS);
  };
}
