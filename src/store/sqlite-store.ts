import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';
import type { RoutingSnapshot } from '../session/index.js';
import { GroupCommit } from './group-commit.js';
import type {
  Conversations,
  Destination,
  HomeChannels,
  MessageLog,
  Outbox,
  Store,
  StoredDelivery,
} from './store.js';

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
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, due_at);
CREATE INDEX IF NOT EXISTS deliveries_done ON deliveries (created_at) WHERE status = 'done';
CREATE TABLE IF NOT EXISTS homes (
  platform TEXT PRIMARY KEY,
  destination TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
  key TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
`;

/** Conversation epochs kept in memory; a miss costs one read. */
const EPOCH_CACHE_SIZE = 100_000;
/**
 * Done deliveries deleted per prune: a day's worth in one DELETE would hold the event loop
 * for as long as it takes. A prune runs once a second, or every 10 ms while the last batch
 * was full, so at most one a commit and still up to 100,000 rows a second.
 */
export const PRUNE_BATCH = 1_000;
const PRUNE_INTERVAL_MS = 1_000;
const PRUNE_BACKLOG_INTERVAL_MS = 10;

interface DeliveryRow {
  id: string;
  kind: StoredDelivery['kind'];
  destination: string;
  text: string;
  in_reply_to: string | null;
  origin: string;
  attempts: number;
  created_at: number;
}

/**
 * The embedded store: one SQLite file in WAL mode with synchronous=NORMAL, which keeps
 * every committed write through a process crash (kill -9); only an OS crash can lose the
 * last transactions. Statements are prepared once and committed in groups (GroupCommit).
 * Completed messages are deleted; completed deliveries are kept for `retentionMs` (a day)
 * so a replayed turn finds their ids, then pruned in bounded batches.
 */
export class SqliteStore implements Store {
  readonly messages: MessageLog;
  readonly outbox: Outbox;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;
  private readonly db: Database.Database;
  private readonly group: GroupCommit;

  /** Opens, creating it and its directory if needed; TL_STORE_FAILED says why it cannot. */
  constructor(path: string, retentionMs = 24 * 3600_000) {
    const db = open(path);
    this.db = db;
    const group = new GroupCommit(db, path);
    this.group = group;
    this.messages = messageLog(db, group);
    this.outbox = outbox(db, group, retentionMs);
    this.homes = homeChannels(db, group);
    this.conversations = conversations(db, group);
  }

  async close(): Promise<void> {
    await this.group.close();
    this.db.close();
  }
}

function open(path: string): Database.Database {
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
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
 * A snapshot is stored with its message and again with each of its deliveries: encode each
 * once. Only frozen ones (captureRouting's) are remembered, so a changed snapshot is never
 * stored with its old encoding.
 */
const encoded = new WeakMap<RoutingSnapshot, string>();
function encodeRouting(routing: RoutingSnapshot): string {
  let json = encoded.get(routing);
  if (json === undefined) {
    json = JSON.stringify(routing);
    if (Object.isFrozen(routing) && Object.isFrozen(routing.session)) encoded.set(routing, json);
  }
  return json;
}

function messageLog(db: Database.Database, group: GroupCommit): MessageLog {
  const insert = db.prepare('INSERT INTO messages (id, routing, text, received_at) VALUES (?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM messages WHERE id = ?');
  const pending = db.prepare<[], { id: string; routing: string; text: string; received_at: number }>(
    'SELECT id, routing, text, received_at FROM messages ORDER BY received_at, rowid',
  );
  return {
    append: (message) =>
      group.run(() => {
        insert.run(message.id, encodeRouting(message.routing), message.text, message.receivedAt);
      }),
    complete: (id) =>
      group.run(() => {
        remove.run(id);
      }),
    pending: () =>
      group.run(() =>
        pending.all().map((row) => ({
          id: row.id,
          routing: JSON.parse(row.routing) as RoutingSnapshot,
          text: row.text,
          receivedAt: row.received_at,
        })),
      ),
  };
}

function outbox(db: Database.Database, group: GroupCommit, retentionMs: number): Outbox {
  const insert = db.prepare(
    `INSERT OR IGNORE INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, attempts, due_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  const done = db.prepare(`UPDATE deliveries SET status = 'done', attempts = attempts + 1, last_error = NULL WHERE id = ?`);
  const lease = db.prepare(`UPDATE deliveries SET due_at = ? WHERE id = ?`);
  const releaseAll = db.prepare(`UPDATE deliveries SET due_at = ? WHERE status = 'pending'`);
  const retry = db.prepare(`UPDATE deliveries SET attempts = attempts + 1, due_at = ?, last_error = ? WHERE id = ?`);
  const failed = db.prepare(`UPDATE deliveries SET status = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ?`);
  const due = db.prepare<[number, number], DeliveryRow>(
    `SELECT id, kind, destination, text, in_reply_to, origin, attempts, created_at FROM deliveries
     WHERE status = 'pending' AND due_at <= ? ORDER BY due_at, rowid LIMIT ?`,
  );
  const nextDue = db.prepare<[], { due_at: number | null }>(`SELECT MIN(due_at) AS due_at FROM deliveries WHERE status = 'pending'`);
  const pendingCount = db.prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`);
  // INDEXED BY: the planner would walk every done row of (status, due_at) for the age test.
  const prune = db.prepare(
    `DELETE FROM deliveries WHERE rowid IN
       (SELECT rowid FROM deliveries INDEXED BY deliveries_done WHERE status = 'done' AND created_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  let nextPrune = 0;
  return {
    add: (delivery, dueAt) =>
      group.run(() => {
        const result = insert.run(
          delivery.id,
          delivery.kind,
          JSON.stringify(delivery.destination),
          delivery.text,
          delivery.inReplyTo ?? null,
          encodeRouting(delivery.origin),
          dueAt,
          delivery.createdAt,
        );
        return result.changes === 1;
      }),
    markDone: (id) =>
      group.run(() => {
        done.run(id);
        const now = Date.now();
        if (now >= nextPrune) {
          const full = prune.run(now - retentionMs).changes === PRUNE_BATCH;
          nextPrune = now + (full ? PRUNE_BACKLOG_INTERVAL_MS : PRUNE_INTERVAL_MS);
        }
      }),
    lease: (id, until) =>
      group.run(() => {
        lease.run(until, id);
      }),
    releaseAll: (now) =>
      group.run(() => {
        releaseAll.run(now);
      }),
    retryAt: (id, dueAt, error) =>
      group.run(() => {
        retry.run(dueAt, error.slice(0, 1000), id);
      }),
    markFailed: (id, error) =>
      group.run(() => {
        failed.run(error.slice(0, 1000), id);
      }),
    due: (now, limit, skip) =>
      group.run(() => {
        const rows = due.all(now, limit + skip.size);
        return rows.filter((row) => !skip.has(row.id)).slice(0, limit).map(toDelivery);
      }),
    nextDueAt: () => group.run(() => nextDue.get()?.due_at ?? undefined),
    pendingCount: () => group.run(() => pendingCount.get()?.n ?? 0),
  };
}

function toDelivery(row: DeliveryRow): StoredDelivery {
  return {
    id: row.id,
    kind: row.kind,
    destination: JSON.parse(row.destination) as Destination,
    text: row.text,
    ...(row.in_reply_to === null ? {} : { inReplyTo: row.in_reply_to }),
    origin: JSON.parse(row.origin) as RoutingSnapshot,
    attempts: row.attempts,
    createdAt: row.created_at,
  };
}

function homeChannels(db: Database.Database, group: GroupCommit): HomeChannels {
  const get = db.prepare<[string], { destination: string }>('SELECT destination FROM homes WHERE platform = ?');
  const set = db.prepare(
    'INSERT INTO homes (platform, destination) VALUES (?, ?) ON CONFLICT (platform) DO UPDATE SET destination = excluded.destination',
  );
  return {
    get: (platform) =>
      group.run(() => {
        const row = get.get(platform);
        return row === undefined ? undefined : (JSON.parse(row.destination) as Destination);
      }),
    set: (destination) =>
      group.run(() => {
        set.run(destination.platform, JSON.stringify(destination));
      }),
  };
}

function conversations(db: Database.Database, group: GroupCommit): Conversations {
  const get = db.prepare<[string], { epoch: number }>('SELECT epoch FROM conversations WHERE key = ?');
  const bump = db.prepare<[string], { epoch: number }>(
    'INSERT INTO conversations (key, epoch) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch',
  );
  // Every message asks for its conversation's epoch, and this process is the store's only
  // writer, so known epochs are answered from memory without waiting for a commit. Bounded:
  // the oldest entries are forgotten and read again when needed.
  const known = new Map<string, number>();
  const remember = (key: string, epoch: number): number => {
    known.delete(key);
    known.set(key, epoch);
    if (known.size > EPOCH_CACHE_SIZE) known.delete(known.keys().next().value!);
    return epoch;
  };
  return {
    epoch: (key) => {
      const epoch = known.get(key);
      return epoch !== undefined ? Promise.resolve(epoch) : group.run(() => remember(key, get.get(key)?.epoch ?? 0));
    },
    next: (key) => group.run(() => remember(key, bump.get(key)!.epoch)),
  };
}
