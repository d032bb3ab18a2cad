import type Database from 'better-sqlite3';
import { formatDestination, type Destination } from '../session/delivery.js';
import { ThreadlineError } from '../errors.js';

/**
 * The outbox's ordering key: a head being sent needs attention when its lease ends, a
 * pending head when its attempt is due. Queries spell it exactly so, to use its index.
 */
export const NEXT_AT = `(CASE status WHEN 'sending' THEN lease_until ELSE due_at END)`;

/**
 * What the tools keep, touched by tools alone so a message's way writes none of it. Processes
 * and schedules are few (capped per destination and in all when added) and counted by their
 * destination index; history is bounded per session and per destination's mirrored entries
 * by each write, and by age in the prune loop. `seq` orders history by insertion. A call's
 * recorded result lives as long as the message whose turn made it.
 */
const TOOL_TABLES = `
CREATE TABLE IF NOT EXISTS processes (
  id TEXT PRIMARY KEY,
  origin TEXT NOT NULL,
  destination TEXT NOT NULL,
  command TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  notify_on_complete INTEGER NOT NULL,
  check_interval_ms INTEGER,
  progress_sent INTEGER NOT NULL DEFAULT 0,
  ended_at INTEGER,
  exit_code INTEGER,
  exit_signal TEXT,
  exit_note TEXT
);
CREATE INDEX IF NOT EXISTS processes_destination ON processes (destination);
CREATE INDEX IF NOT EXISTS processes_ended ON processes (ended_at) WHERE ended_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY,
  origin TEXT NOT NULL,
  destination TEXT NOT NULL,
  target TEXT NOT NULL,
  text TEXT NOT NULL,
  cron TEXT,
  timezone TEXT,
  next_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS schedules_next ON schedules (next_at);
CREATE INDEX IF NOT EXISTS schedules_destination ON schedules (destination, next_at);
CREATE TABLE IF NOT EXISTS history (
  seq INTEGER PRIMARY KEY,
  session_id TEXT,
  destination TEXT NOT NULL,
  role TEXT NOT NULL,
  text TEXT NOT NULL,
  source TEXT,
  extra TEXT,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS history_session ON history (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS history_mirrored ON history (destination, seq) WHERE session_id IS NULL;
CREATE INDEX IF NOT EXISTS history_age ON history (at);
CREATE TABLE IF NOT EXISTS call_results (
  key TEXT PRIMARY KEY,
  message_id TEXT NOT NULL,
  result TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS call_results_message ON call_results (message_id);
`;

/**
 * Deliveries are per-destination queues. Of the open (pending or sending) deliveries of a
 * destination exactly one is its head, the only one that may be sent, so a chat keeps its
 * order; a claim reads heads through `deliveries_heads` and never walks the rows behind them.
 * `open_counts` holds, per destination, the messages waiting for their turn and the open
 * deliveries, and under '' (no destination is spelled so) the open deliveries of all; triggers
 * keep it in the same transaction as every change, so the caps cost a key lookup or two.
 * A message's way from intake to its reply marked done writes as few pages as this allows:
 * each page a commit writes is a write to the WAL, the store's largest cost a message.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  routing TEXT NOT NULL,
  text TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  destination TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS open_counts (
  destination TEXT PRIMARY KEY,
  waiting INTEGER NOT NULL DEFAULT 0,
  open INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT OR IGNORE INTO open_counts (destination) VALUES ('');
CREATE TRIGGER IF NOT EXISTS messages_waiting AFTER INSERT ON messages WHEN NEW.destination IS NOT NULL BEGIN
  INSERT INTO open_counts (destination, waiting) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET waiting = waiting + 1;
END;
CREATE TRIGGER IF NOT EXISTS messages_done AFTER DELETE ON messages WHEN OLD.destination IS NOT NULL BEGIN
  UPDATE open_counts SET waiting = waiting - 1 WHERE destination = OLD.destination;
  DELETE FROM open_counts WHERE destination = OLD.destination AND waiting <= 0 AND open <= 0;
END;
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  destination TEXT NOT NULL,
  text TEXT NOT NULL,
  in_reply_to TEXT,
  origin TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'done', 'failed')),
  head INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  attempts_since INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  lease_until INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  attachment TEXT,
  replaces TEXT,
  button TEXT
);
-- Covering status and attempts_since: the oldest delivery being sent is found among the heads,
-- so a delivery sent at once and done touches no index kept for that question.
CREATE INDEX IF NOT EXISTS deliveries_heads ON deliveries (${NEXT_AT}, status, attempts_since) WHERE head = 1;
CREATE INDEX IF NOT EXISTS deliveries_queued ON deliveries (destination) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_pending_since ON deliveries (attempts_since) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_done ON deliveries (finished_at) WHERE status = 'done';
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (finished_at) WHERE status = 'failed';
-- The forensics read of dead letters, newest series first, stops at its LIMIT instead of sorting them all.
CREATE INDEX IF NOT EXISTS deliveries_failed_since ON deliveries (attempts_since) WHERE status = 'failed';
CREATE TRIGGER IF NOT EXISTS deliveries_opened AFTER INSERT ON deliveries WHEN NEW.status IN ('pending', 'sending') BEGIN
  INSERT INTO open_counts (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
  UPDATE open_counts SET open = open + 1 WHERE destination = '';
END;
CREATE TRIGGER IF NOT EXISTS deliveries_reopened AFTER UPDATE OF status ON deliveries
WHEN OLD.status IN ('done', 'failed') AND NEW.status IN ('pending', 'sending') BEGIN
  INSERT INTO open_counts (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
  UPDATE open_counts SET open = open + 1 WHERE destination = '';
END;
CREATE TRIGGER IF NOT EXISTS deliveries_closed AFTER UPDATE OF status ON deliveries
WHEN OLD.status IN ('pending', 'sending') AND NEW.status IN ('done', 'failed') BEGIN
  UPDATE open_counts SET open = open - 1 WHERE destination = OLD.destination;
  DELETE FROM open_counts WHERE destination = OLD.destination AND waiting <= 0 AND open <= 0;
  UPDATE open_counts SET open = open - 1 WHERE destination = '';
END;
CREATE TABLE IF NOT EXISTS intake_keys (
  key TEXT PRIMARY KEY,
  answer TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS intake_keys_expiry ON intake_keys (expires_at);
CREATE TABLE IF NOT EXISTS homes (
  platform TEXT PRIMARY KEY,
  destination TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
  key TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
-- Where each platform event stream read by position (Matrix's /sync) was read up to. Made by
-- every writable open, so an older store gains it without a new schema version; read-only
-- readers never ask for it.
CREATE TABLE IF NOT EXISTS sync_tokens (
  stream TEXT PRIMARY KEY,
  token TEXT NOT NULL
);
${TOOL_TABLES}`;

/** The layout SCHEMA describes, kept in `PRAGMA user_version`; stores below it are moved over first. */
export const SCHEMA_VERSION = 4;

/**
 * Refuses a store this version does not read as it is (TL_STORE_FAILED naming both versions):
 * a read-only reader can neither move an older store over nor know a newer one's layout.
 */
export function requireSchemaVersion(db: Database.Database, name: string): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version === SCHEMA_VERSION) return;
  const fix =
    version < SCHEMA_VERSION
      ? 'start the gateway of this version on it once to move it over, then read it again'
      : 'read it with the threadline version that wrote it';
  throw new ThreadlineError(
    'TL_STORE_FAILED',
    `The store at ${name} has schema version ${version} and this threadline reads version ${SCHEMA_VERSION}: ${fix}.`,
  );
}

/** Creates the schema, first moving a store written by an earlier version to it. */
export function createSchema(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version >= SCHEMA_VERSION) {
      db.exec(SCHEMA);
      return;
    }
    if (version < 1) moveFromVersion0(db);
    else db.exec(SCHEMA);
    // Version 2: deliveries may carry an attachment (SCHEMA made the tools' tables).
    if (!columnsOf(db, 'deliveries').includes('attachment')) db.exec('ALTER TABLE deliveries ADD COLUMN attachment TEXT');
    // Version 3: a delivery may replace a live message (the platform's id of it).
    if (!columnsOf(db, 'deliveries').includes('replaces')) db.exec('ALTER TABLE deliveries ADD COLUMN replaces TEXT');
    // Version 4: a delivery may carry a button that posts a command (a CommandButton as JSON).
    if (!columnsOf(db, 'deliveries').includes('button')) db.exec('ALTER TABLE deliveries ADD COLUMN button TEXT');
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

function columnsOf(db: Database.Database, table: string): string[] {
  return db.prepare<[], { name: string }>(`PRAGMA table_info(${table})`).all().map((column) => column.name);
}

/** Stores without a user_version: counters in tables of their own, and the oldest without heads. */
function moveFromVersion0(db: Database.Database): void {
  const messageColumns = columnsOf(db, 'messages');
  const columns = columnsOf(db, 'deliveries');
  const legacy = columns.length > 0 && !columns.includes('head');
  if (legacy) {
    // The oldest stores had no `leased` flag: each of their pending deliveries counts as being sent.
    if (!columns.includes('leased')) db.exec('ALTER TABLE deliveries ADD COLUMN leased INTEGER NOT NULL DEFAULT 1');
    db.exec(`DROP INDEX IF EXISTS deliveries_due; DROP INDEX IF EXISTS deliveries_done; DROP INDEX IF EXISTS deliveries_pending_destination;
      ALTER TABLE deliveries RENAME TO deliveries_legacy;`);
  }
  // Messages were a table with rowids, counted in tables of their own; their copy is counted afresh below.
  if (messageColumns.length > 0) db.exec('ALTER TABLE messages RENAME TO messages_v0');
  db.exec(`DROP TRIGGER IF EXISTS messages_waiting; DROP TRIGGER IF EXISTS messages_done; DROP TRIGGER IF EXISTS deliveries_opened;
    DROP TRIGGER IF EXISTS deliveries_reopened; DROP TRIGGER IF EXISTS deliveries_closed;
    DROP TABLE IF EXISTS messages_open; DROP TABLE IF EXISTS outbox_open; DROP TABLE IF EXISTS outbox_totals;
    DROP INDEX IF EXISTS deliveries_next; DROP INDEX IF EXISTS deliveries_open_since;`);
  db.exec(SCHEMA);
  if (legacy) migrateLegacyDeliveries(db);
  if (messageColumns.length > 0) {
    // Messages of earlier versions may have no destination: they count toward no cap.
    const destination = messageColumns.includes('destination') ? 'destination' : 'NULL';
    db.exec(`INSERT INTO messages (id, routing, text, received_at, destination)
      SELECT id, routing, text, received_at, ${destination} FROM messages_v0 ORDER BY rowid;
      DROP TABLE messages_v0;`);
  }
  recount(db);
}

/** Counts every destination's waiting messages and open deliveries from the rows themselves. */
function recount(db: Database.Database): void {
  db.exec(`
    DELETE FROM open_counts;
    INSERT INTO open_counts (destination, waiting, open)
    SELECT destination, SUM(waiting), SUM(open) FROM (
      SELECT destination, 1 AS waiting, 0 AS open FROM messages WHERE destination IS NOT NULL
      UNION ALL SELECT destination, 0, 1 FROM deliveries WHERE status IN ('pending', 'sending'))
    GROUP BY destination;
    INSERT INTO open_counts (destination, open) SELECT '', COUNT(*) FROM deliveries WHERE status IN ('pending', 'sending');
  `);
}

/**
 * Earlier stores kept destinations as JSON, a `leased` flag instead of a `sending` status,
 * and no heads. Their open deliveries become pending (those being sent are due at once,
 * as a restart made them before), each destination's oldest its head; nothing is dropped.
 */
function migrateLegacyDeliveries(db: Database.Database): void {
  db.function('tl_destination', { deterministic: true }, (json: unknown) => formatDestination(JSON.parse(String(json)) as Destination));
  db.exec(`
    INSERT INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, attempts, attempts_since, due_at, last_error, created_at, finished_at)
    SELECT id, kind, tl_destination(destination), text, in_reply_to, origin, status, attempts, created_at,
           CASE WHEN status = 'pending' AND leased = 1 THEN 0 ELSE due_at END,
           last_error, created_at, CASE WHEN status IN ('done', 'failed') THEN created_at END
    FROM deliveries_legacy ORDER BY rowid;
    DROP TABLE deliveries_legacy;
    UPDATE deliveries SET head = 1 WHERE rowid IN (SELECT MIN(rowid) FROM deliveries WHERE status = 'pending' GROUP BY destination);
  `);
}
