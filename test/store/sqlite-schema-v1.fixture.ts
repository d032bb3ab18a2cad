// The layout of SCHEMA_VERSION 1, verbatim, to make stores as that version wrote them.
/** Version 1's schema; a store made with it has `PRAGMA user_version = 1`. */
export const SCHEMA_V1 = `
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
  finished_at INTEGER
);
-- Covering status and attempts_since: the oldest delivery being sent is found among the heads,
-- so a delivery sent at once and done touches no index kept for that question.
CREATE INDEX IF NOT EXISTS deliveries_heads ON deliveries ((CASE status WHEN 'sending' THEN lease_until ELSE due_at END), status, attempts_since) WHERE head = 1;
CREATE INDEX IF NOT EXISTS deliveries_queued ON deliveries (destination) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_pending_since ON deliveries (attempts_since) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_done ON deliveries (finished_at) WHERE status = 'done';
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (finished_at) WHERE status = 'failed';
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
`;
