import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/sqlite-schema.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { webhookOrigin } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('sqlite-schema');

/** The layout before `open_counts`: messages with rowids, counters in three tables, no user_version. */
const PREVIOUS_LAYOUT = `
CREATE TABLE messages (id TEXT PRIMARY KEY, routing TEXT NOT NULL, text TEXT NOT NULL, received_at INTEGER NOT NULL, destination TEXT);
CREATE TABLE messages_open (destination TEXT PRIMARY KEY, open INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER messages_waiting AFTER INSERT ON messages WHEN NEW.destination IS NOT NULL BEGIN
  INSERT INTO messages_open (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
END;
CREATE TRIGGER messages_done AFTER DELETE ON messages WHEN OLD.destination IS NOT NULL BEGIN
  UPDATE messages_open SET open = open - 1 WHERE destination = OLD.destination;
  DELETE FROM messages_open WHERE destination = OLD.destination AND open <= 0;
END;
CREATE TABLE deliveries (id TEXT PRIMARY KEY, kind TEXT NOT NULL, destination TEXT NOT NULL, text TEXT NOT NULL, in_reply_to TEXT,
  origin TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'done', 'failed')), head INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0, attempts_since INTEGER NOT NULL, due_at INTEGER NOT NULL, lease_until INTEGER, last_error TEXT,
  created_at INTEGER NOT NULL, finished_at INTEGER);
CREATE INDEX deliveries_next ON deliveries ((CASE status WHEN 'sending' THEN lease_until ELSE due_at END)) WHERE head = 1;
CREATE INDEX deliveries_queued ON deliveries (destination) WHERE status = 'pending';
CREATE INDEX deliveries_done ON deliveries (finished_at) WHERE status = 'done';
CREATE INDEX deliveries_failed ON deliveries (finished_at) WHERE status = 'failed';
CREATE INDEX deliveries_open_since ON deliveries (attempts_since) WHERE status IN ('pending', 'sending');
CREATE TABLE outbox_open (destination TEXT PRIMARY KEY, open INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE outbox_totals (id INTEGER PRIMARY KEY CHECK (id = 1), open INTEGER NOT NULL);
INSERT INTO outbox_totals (id, open) VALUES (1, 0);
CREATE TRIGGER deliveries_opened AFTER INSERT ON deliveries WHEN NEW.status IN ('pending', 'sending') BEGIN
  INSERT INTO outbox_open (destination, open) VALUES (NEW.destination, 1) ON CONFLICT (destination) DO UPDATE SET open = open + 1;
  UPDATE outbox_totals SET open = open + 1;
END;
CREATE TRIGGER deliveries_closed AFTER UPDATE OF status ON deliveries
WHEN OLD.status IN ('pending', 'sending') AND NEW.status IN ('done', 'failed') BEGIN
  UPDATE outbox_open SET open = open - 1 WHERE destination = OLD.destination;
  DELETE FROM outbox_open WHERE destination = OLD.destination AND open <= 0;
  UPDATE outbox_totals SET open = open - 1;
END;
`;

const T0 = Date.UTC(2026, 10, 30, 12);

describe('createSchema', () => {
  it('moves a store of the previous layout over: messages kept in order, caps counted afresh from the rows', async () => {
    const path = join(tempDir(), 'previous.db');
    const old = new Database(path);
    old.exec(PREVIOUS_LAYOUT);
    const routing = JSON.stringify(webhookOrigin('c:1', 'tl_session'));
    // Ids out of alphabetical order: pending() still answers oldest first.
    const message = old.prepare(`INSERT INTO messages VALUES (?, ?, ?, ?, ?)`);
    message.run('m-b', routing, 'first', 1, 'webhook:a');
    message.run('m-a', routing, 'second', 2, 'webhook:a');
    message.run('m-c', routing, 'from before destinations', 3, null);
    const delivery = old.prepare(
      `INSERT INTO deliveries (id, kind, destination, text, origin, status, head, attempts_since, due_at, lease_until, created_at, finished_at)
       VALUES (?, 'reply', ?, 'hi', ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    delivery.run('d-sending', 'webhook:a', routing, 'sending', 1, T0, T0, T0 + 60_000, T0, null);
    delivery.run('d-queued', 'webhook:a', routing, 'pending', 0, T0 + 5, T0 + 5, null, T0 + 5, null);
    delivery.run('d-other', 'webhook:b', routing, 'pending', 1, T0 + 9, T0 + 9, null, T0 + 9, null);
    delivery.run('d-done', 'webhook:b', routing, 'done', 0, T0 - 9, T0 - 9, null, T0 - 9, T0 - 1);
    // A counter gone wrong in the old tables is not carried over.
    old.exec(`UPDATE outbox_totals SET open = 99`);
    old.close();

    const store = await SqliteStore.open(path);
    expect((await store.messages.pending()).map((stored) => [stored.id, stored.text])).toEqual([
      ['m-b', 'first'],
      ['m-a', 'second'],
      ['m-c', 'from before destinations'],
    ]);
    // webhook:a holds 2 messages waiting and 2 open deliveries; webhook:b 1 open delivery.
    expect(await store.outbox.pressure(4)).toEqual({ open: 3, fullDestinations: 1, oldestOpenSince: T0 });
    const checks = (chatId: string, maxOpenPerDestination: number, maxOpenTotal = 100) => ({
      destination: { platform: 'webhook', chatId },
      maxOpenPerDestination,
      maxOpenTotal,
    });
    const stored = (id: string) => ({ id, routing: webhookOrigin('c:1', 'tl_session'), text: id, receivedAt: 4 });
    expect(await store.messages.accept(stored('m-full'), checks('a', 4))).toEqual({ status: 'full', scope: 'destination', open: 4 });
    expect(await store.messages.accept(stored('m-total'), checks('b', 4, 3))).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(await store.messages.accept(stored('m-new'), checks('b', 4, 4))).toEqual({ status: 'accepted' });
    // The heads, and the queue behind them, carry on as they were.
    await store.outbox.markDone('d-sending', T0 + 60_000);
    expect((await store.outbox.claim(T0 + 10, 5, T0 + 1_000)).deliveries.map((row) => row.id).sort()).toEqual(['d-other', 'd-queued']);
    await store.close();

    const reader = new Database(path, { readonly: true });
    const names = reader.prepare<[], { name: string }>(`SELECT name FROM sqlite_schema ORDER BY name`).all().map((row) => row.name);
    for (const gone of ['messages_open', 'outbox_open', 'outbox_totals', 'messages_v0', 'deliveries_next', 'deliveries_open_since']) {
      expect(names).not.toContain(gone);
    }
    expect(reader.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    reader.close();
  });

  it('opens a store of this layout again without moving anything', async () => {
    const path = join(tempDir(), 'current.db');
    const first = await SqliteStore.open(path);
    const checks = { destination: { platform: 'webhook', chatId: 'a' }, maxOpenPerDestination: 1, maxOpenTotal: 10 };
    await first.messages.accept({ id: 'm-1', routing: webhookOrigin('a', 'tl_session'), text: 'kept', receivedAt: 1 }, checks);
    await first.close();
    const again = await SqliteStore.open(path);
    expect((await again.messages.pending()).map((stored) => stored.id)).toEqual(['m-1']);
    expect(await again.messages.accept({ id: 'm-2', routing: webhookOrigin('a', 'tl_session'), text: 'refused', receivedAt: 2 }, checks)).toEqual({
      status: 'full',
      scope: 'destination',
      open: 1,
    });
    await again.close();
  });
});
