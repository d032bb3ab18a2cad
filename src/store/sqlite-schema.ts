import type Database from 'better-sqlite3';
import { formatDestination, type Destination } from '../deliveries/delivery.js';

/**
 * The outbox's ordering key: a head being sent needs attention when its lease ends, a
 * pending head when its attempt is due. Queries spell it exactly so, to use its index.
 */
export const NEXT_AT = `(CASE status WHEN 'sending' THEN lease_until ELSE due_at END)`;

/**
 * Deliveries are per-destination queues. Of the open (pending or sending) deliveries of a
 * destination exactly one is its head, the only one that may be sent, so a chat keeps its
 * order; a claim reads heads through `deliveries_next` and never walks the rows behind them.
 * `outbox_open` and `outbox_totals` count open deliveries, and `messages_open` the messages
 * waiting for their turn per destination of their replies, kept by triggers in the same
 * transaction as every change, so the caps cost a key lookup or two.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  routing TEXT NOT NULL,
  text TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  destination TEXT
);
CREATE TABLE IF NOT EXISTS messages_open (destination TEXT PRIMARY KEY, open INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS messages_waiting AFTER INSERT ON messages WHEN NEW.destination IS NOT NULL BEGIN
  INSERT INTO messages_open (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
END;
CREATE TRIGGER IF NOT EXISTS messages_done AFTER DELETE ON messages WHEN OLD.destination IS NOT NULL BEGIN
  UPDATE messages_open SET open = open - 1 WHERE destination = OLD.destination;
  DELETE FROM messages_open WHERE destination = OLD.destination AND open <= 0;
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
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS deliveries_next ON deliveries (${NEXT_AT}) WHERE head = 1;
CREATE INDEX IF NOT EXISTS deliveries_queued ON deliveries (destination) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_done ON deliveries (finished_at) WHERE status = 'done';
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (finished_at) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS deliveries_open_since ON deliveries (attempts_since) WHERE status IN ('pending', 'sending');
CREATE TABLE IF NOT EXISTS outbox_open (destination TEXT PRIMARY KEY, open INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox_totals (id INTEGER PRIMARY KEY CHECK (id = 1), open INTEGER NOT NULL);
INSERT OR IGNORE INTO outbox_totals (id, open) VALUES (1, 0);
CREATE TRIGGER IF NOT EXISTS deliveries_opened AFTER INSERT ON deliveries WHEN NEW.status IN ('pending', 'sending') BEGIN
  INSERT INTO outbox_open (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
  UPDATE outbox_totals SET open = open + 1;
END;
CREATE TRIGGER IF NOT EXISTS deliveries_reopened AFTER UPDATE OF status ON deliveries
WHEN OLD.status IN ('done', 'failed') AND NEW.status IN ('pending', 'sending') BEGIN
  INSERT INTO outbox_open (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
  UPDATE outbox_totals SET open = open + 1;
END;
CREATE TRIGGER IF NOT EXISTS deliveries_closed AFTER UPDATE OF status ON deliveries
WHEN OLD.status IN ('pending', 'sending') AND NEW.status IN ('done', 'failed') BEGIN
  UPDATE outbox_open SET open = open - 1 WHERE destination = OLD.destination;
  DELETE FROM outbox_open WHERE destination = OLD.destination AND open <= 0;
  UPDATE outbox_totals SET open = open - 1;
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
`;

/** Creates the schema, first moving a store written by an earlier version to it. */
export function createSchema(db: Database.Database): void {
  db.transaction(() => {
    // Messages of earlier versions have no destination and count toward no cap.
    const messageColumns = db.prepare<[], { name: string }>('PRAGMA table_info(messages)').all();
    if (messageColumns.length > 0 && !messageColumns.some((column) => column.name === 'destination')) {
      db.exec('ALTER TABLE messages ADD COLUMN destination TEXT');
    }
    const columns = db.prepare<[], { name: string }>('PRAGMA table_info(deliveries)').all();
    const legacy = columns.length > 0 && !columns.some((column) => column.name === 'head');
    if (legacy) {
      // The oldest stores had no `leased` flag: each of their pending deliveries counts as being sent.
      if (!columns.some((column) => column.name === 'leased')) db.exec('ALTER TABLE deliveries ADD COLUMN leased INTEGER NOT NULL DEFAULT 1');
      db.exec(`DROP INDEX IF EXISTS deliveries_due; DROP INDEX IF EXISTS deliveries_done; DROP INDEX IF EXISTS deliveries_pending_destination;
        ALTER TABLE deliveries RENAME TO deliveries_legacy;`);
    }
    db.exec(SCHEMA);
    if (legacy) migrateLegacyDeliveries(db);
  }).immediate();
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
