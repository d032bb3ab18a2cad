import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  routing TEXT NOT NULL,
  text TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  destination TEXT NOT NULL,
  text TEXT NOT NULL,
  in_reply_to TEXT,
  origin TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  due_at INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  leased INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, due_at);
CREATE INDEX IF NOT EXISTS deliveries_done ON deliveries (created_at) WHERE status = 'done';
CREATE INDEX IF NOT EXISTS deliveries_pending_destination ON deliveries (destination) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS homes (
  platform TEXT PRIMARY KEY,
  destination TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
  key TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
`;

/**
 * Done deliveries deleted per prune: a day's worth in one DELETE would hold the store's
 * thread for as long as it takes. A prune runs once a second, or every 10 ms while the last
 * batch was full, so at most one a commit and still up to 100,000 rows a second.
 */
export const PRUNE_BATCH = 1_000;
const PRUNE_INTERVAL_MS = 1_000;
const PRUNE_BACKLOG_INTERVAL_MS = 10;

export interface MessageRow {
  id: string;
  routing: string;
  text: string;
  received_at: number;
}

export interface DeliveryRow {
  id: string;
  kind: string;
  destination: string;
  text: string;
  in_reply_to: string | null;
  origin: string;
  attempts: number;
  created_at: number;
}

/** Opens the database file in WAL mode with synchronous=NORMAL and creates the schema. */
export function openDatabase(path: string): Database.Database {
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    addLeasedColumn(db);
    return db;
  } catch (error) {
    throw new ThreadlineError(
      'TL_STORE_FAILED',
      `Cannot open the store at ${path}: ${messageOf(error)}. Check that THREADLINE_DATA_DIR is writable and has space.`,
      { cause: error },
    );
  }
}

/**
 * Stores written before deliveries had a `leased` flag get it, set on every row: the next
 * start then makes them all due at once, as those versions did.
 */
function addLeasedColumn(db: Database.Database): void {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(deliveries)').all();
  if (!columns.some((column) => column.name === 'leased')) db.exec('ALTER TABLE deliveries ADD COLUMN leased INTEGER NOT NULL DEFAULT 1');
}

/**
 * Every statement the store runs, prepared once, as functions of plain values: they are
 * called by name with arguments posted from the event-loop thread. JSON columns arrive
 * encoded and leave encoded; times come from the caller.
 */
export function sqliteOperations(db: Database.Database, retentionMs: number) {
  const statement = <Row = unknown>(sql: string) => db.prepare<unknown[], Row>(sql);
  const appendMessage = statement('INSERT INTO messages (id, routing, text, received_at) VALUES (?, ?, ?, ?)');
  const removeMessage = statement('DELETE FROM messages WHERE id = ?');
  const pendingMessages = statement<MessageRow>('SELECT id, routing, text, received_at FROM messages ORDER BY received_at, rowid');
  const addDelivery = statement(
    `INSERT OR IGNORE INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, attempts, due_at, created_at, leased)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, 1)`,
  );
  const markDone = statement(`UPDATE deliveries SET status = 'done', attempts = attempts + 1, last_error = NULL WHERE id = ?`);
  // A leased row is being sent (due_at is when the lease ends); one waiting for its retry is not.
  const lease = statement(`UPDATE deliveries SET due_at = ?, leased = 1 WHERE id = ?`);
  const releaseLeases = statement(`UPDATE deliveries SET due_at = ?, leased = 0 WHERE status = 'pending' AND leased = 1`);
  const retryAt = statement(`UPDATE deliveries SET attempts = attempts + 1, due_at = ?, last_error = ?, leased = 0 WHERE id = ?`);
  const markFailed = statement(`UPDATE deliveries SET status = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ?`);
  // Only the oldest pending delivery of a destination is ever due: a chat gets its
  // deliveries in order, and one waiting for its retry holds back the ones behind it.
  const oldestOfItsDestination = `NOT EXISTS (SELECT 1 FROM deliveries o
     WHERE o.status = 'pending' AND o.destination = d.destination AND o.rowid < d.rowid)`;
  const due = statement<DeliveryRow>(
    `SELECT id, kind, destination, text, in_reply_to, origin, attempts, created_at FROM deliveries d
     WHERE status = 'pending' AND due_at <= ? AND ${oldestOfItsDestination} ORDER BY due_at, rowid LIMIT ?`,
  );
  const nextDue = statement<{ due_at: number | null }>(
    `SELECT MIN(due_at) AS due_at FROM deliveries d WHERE status = 'pending' AND ${oldestOfItsDestination}`,
  );
  const pendingByDestination = statement<{ destination: string; n: number }>(
    `SELECT destination, COUNT(*) AS n FROM deliveries WHERE status = 'pending' GROUP BY destination`,
  );
  const pendingCount = statement<{ n: number }>(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`);
  // INDEXED BY: the planner would walk every done row of (status, due_at) for the age test.
  const prune = statement(
    `DELETE FROM deliveries WHERE rowid IN
       (SELECT rowid FROM deliveries INDEXED BY deliveries_done WHERE status = 'done' AND created_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  const getHome = statement<{ destination: string }>('SELECT destination FROM homes WHERE platform = ?');
  const setHome = statement(
    'INSERT INTO homes (platform, destination) VALUES (?, ?) ON CONFLICT (platform) DO UPDATE SET destination = excluded.destination',
  );
  const getEpoch = statement<{ epoch: number }>('SELECT epoch FROM conversations WHERE key = ?');
  const nextEpoch = statement<{ epoch: number }>(
    'INSERT INTO conversations (key, epoch) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch',
  );
  let nextPrune = 0;
  return {
    appendMessage(id: string, routing: string, text: string, receivedAt: number): void {
      appendMessage.run(id, routing, text, receivedAt);
    },
    completeMessage(id: string): void {
      removeMessage.run(id);
    },
    pendingMessages: (): MessageRow[] => pendingMessages.all(),
    addDelivery(id: string, kind: string, destination: string, text: string, inReplyTo: string | null, origin: string, dueAt: number, createdAt: number): boolean {
      return addDelivery.run(id, kind, destination, text, inReplyTo, origin, dueAt, createdAt).changes === 1;
    },
    /** Also prunes done deliveries older than the retention, in bounded batches. */
    markDone(id: string, now: number): void {
      markDone.run(id);
      if (now >= nextPrune) {
        const full = prune.run(now - retentionMs).changes === PRUNE_BATCH;
        nextPrune = now + (full ? PRUNE_BACKLOG_INTERVAL_MS : PRUNE_INTERVAL_MS);
      }
    },
    lease(id: string, until: number): void {
      lease.run(until, id);
    },
    releaseLeases(now: number): void {
      releaseLeases.run(now);
    },
    retryAt(id: string, dueAt: number, error: string): void {
      retryAt.run(dueAt, error.slice(0, 1000), id);
    },
    markFailed(id: string, error: string): void {
      markFailed.run(error.slice(0, 1000), id);
    },
    due(now: number, limit: number, skip: readonly string[]): DeliveryRow[] {
      const excluded = new Set(skip);
      return due
        .all(now, limit + excluded.size)
        .filter((row) => !excluded.has(row.id))
        .slice(0, limit);
    },
    nextDueAt: (): number | undefined => nextDue.get()?.due_at ?? undefined,
    pendingByDestination: (): { destination: string; n: number }[] => pendingByDestination.all(),
    pendingCount: (): number => pendingCount.get()?.n ?? 0,
    getHome: (platform: string): string | undefined => getHome.get(platform)?.destination,
    setHome(platform: string, destination: string): void {
      setHome.run(platform, destination);
    },
    epoch: (key: string): number => getEpoch.get(key)?.epoch ?? 0,
    nextEpoch: (key: string): number => nextEpoch.get(key)!.epoch,
  };
}

export type SqliteOperations = ReturnType<typeof sqliteOperations>;
export type OperationName = keyof SqliteOperations;
