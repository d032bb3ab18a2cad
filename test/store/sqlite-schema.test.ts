import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/sqlite-schema.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { SCHEMA_V1 } from './sqlite-schema-v1.fixture.js';
import { chat, routingOf } from './store.fixture.js';
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
    const routing = JSON.stringify(routingOf('c:1', 'tl_session'));
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
    const stored = (id: string) => ({ id, routing: routingOf('c:1', 'tl_session'), text: id, receivedAt: 4 });
    expect(await store.messages.accept(stored('m-full'), checks('a', 4))).toEqual({ status: 'full', scope: 'destination', open: 4 });
    expect(await store.messages.accept(stored('m-total'), checks('b', 4, 3))).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(await store.messages.accept(stored('m-new'), checks('b', 4, 4))).toEqual({ status: 'accepted' });
    // The heads, and the queue behind them, carry on as they were.
    await store.outbox.markDone('d-sending', T0 + 60_000);
    expect((await store.outbox.claim(T0 + 10, 5, T0 + 1_000)).deliveries.map((row) => row.id).sort()).toEqual(['d-other', 'd-queued']);
    // Its deliveries table, kept as it was, carries attachments now.
    const attachment = { filename: 'a.ogg', contentType: 'audio/ogg', dataBase64: 'AAEC' };
    await store.outbox.add({ id: 'd-voice', kind: 'reply', destination: chat('c'), text: 'v', origin: routingOf('c'), createdAt: T0, attachment }, T0);
    expect((await store.outbox.list({ chatId: 'c', limit: 1 }))[0]?.attachment).toEqual(attachment);
    // And the live messages they replace.
    await store.outbox.add({ id: 'd-live', kind: 'reply', destination: chat('c'), text: 'w', origin: routingOf('c'), createdAt: T0 + 1, replaces: '77' }, T0);
    expect((await store.outbox.list({ chatId: 'c', limit: 1 }))[0]?.replaces).toBe('77');
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
    await first.messages.accept({ id: 'm-1', routing: routingOf('a', 'tl_session'), text: 'kept', receivedAt: 1 }, checks);
    await first.close();
    const again = await SqliteStore.open(path);
    expect((await again.messages.pending()).map((stored) => stored.id)).toEqual(['m-1']);
    expect(await again.messages.accept({ id: 'm-2', routing: routingOf('a', 'tl_session'), text: 'refused', receivedAt: 2 }, checks)).toEqual({
      status: 'full',
      scope: 'destination',
      open: 1,
    });
    await again.close();
  });

  it('moves a version-1 store to the current version keeping every row, and the tools\' tables work after a reopen', async () => {
    const path = join(tempDir(), 'v1.db');
    const v1 = new Database(path);
    v1.exec(SCHEMA_V1);
    v1.pragma('user_version = 1');
    const routing = JSON.stringify(routingOf('a'));
    v1.prepare(`INSERT INTO messages (id, routing, text, received_at, destination) VALUES (?, ?, ?, ?, ?)`).run('m-1', routing, 'waiting', 1, 'webhook:a');
    const delivery = v1.prepare(
      `INSERT INTO deliveries (id, kind, destination, text, origin, status, head, attempts_since, due_at, lease_until, created_at, finished_at)
       VALUES (?, 'reply', 'webhook:a', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    delivery.run('d-sending', 'first', routing, 'sending', 1, T0, T0, T0 + 60_000, T0, null);
    delivery.run('d-queued', 'second', routing, 'pending', 0, T0 + 5, T0 + 5, null, T0 + 5, null);
    delivery.run('d-done', 'earlier', routing, 'done', 0, T0 - 9, T0 - 9, null, T0 - 9, T0 - 1);
    v1.prepare(`INSERT INTO homes (platform, destination) VALUES ('webhook', 'webhook:home')`).run();
    v1.prepare(`INSERT INTO conversations (key, epoch) VALUES ('k', 3)`).run();
    v1.close();

    const store = await SqliteStore.open(path);
    expect((await store.messages.pending()).map((stored) => [stored.id, stored.text])).toEqual([['m-1', 'waiting']]);
    expect((await store.outbox.list({ limit: 10 })).map((record) => [record.id, record.status, record.text])).toEqual([
      ['d-done', 'done', 'earlier'],
      ['d-queued', 'pending', 'second'],
      ['d-sending', 'sending', 'first'],
    ]);
    expect((await store.outbox.list({ limit: 10 })).some((record) => 'attachment' in record || 'replaces' in record)).toBe(false);
    // Counts carry on: one message waiting and two open deliveries of webhook:a.
    expect(await store.messages.accept({ id: 'm-2', routing: routingOf('a'), text: 'x', receivedAt: 2 }, {
      destination: chat('a'),
      maxOpenPerDestination: 3,
      maxOpenTotal: 100,
    })).toEqual({ status: 'full', scope: 'destination', open: 3 });
    expect(await store.homes.get('webhook')).toEqual(chat('home'));
    expect(await store.conversations.epoch('k')).toBe(3);
    const caps = { maxPerDestination: 5, maxTotal: 5 };
    const reminder = { id: 'r1', origin: routingOf('a'), destination: chat('a'), target: 'origin', text: 'hi', nextAt: T0, createdAt: T0 };
    expect(await store.schedules.add(reminder, caps)).toEqual({ status: 'added' });
    const job = { id: 'p1', origin: routingOf('a'), destination: chat('a'), command: 'true', pid: 7, startedAt: T0, notifyOnComplete: false, progressSent: 0 };
    expect(await store.processes.add(job, caps)).toEqual({ status: 'added' });
    await store.history.append('s', chat('a'), [{ role: 'user', text: 'hello', at: T0 }], 10);
    await store.outbox.markDone('d-sending', T0 + 60_000);
    await store.close();

    const reader = new Database(path, { readonly: true });
    expect(reader.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    reader.close();
    const again = await SqliteStore.open(path);
    expect((await again.outbox.claim(T0 + 10, 5, T0 + 1_000)).deliveries.map((row) => row.id)).toEqual(['d-queued']);
    expect(await again.schedules.due(T0, 5)).toEqual([reminder]);
    expect(await again.processes.all()).toEqual([job]);
    expect(await again.history.recent('s', chat('a'), 5)).toEqual([{ role: 'user', text: 'hello', at: T0 }]);
    expect((await again.messages.pending()).map((stored) => stored.id)).toEqual(['m-1']);
    await again.close();
  });

  it('adds no index or trigger to the tables a message writes on its way to its reply', async () => {
    const namesOn = (db: Database.Database) =>
      db
        .prepare<[], { name: string }>(
          `SELECT type || ' ' || name AS name FROM sqlite_schema WHERE type IN ('index', 'trigger')
           AND tbl_name IN ('messages', 'deliveries', 'open_counts', 'intake_keys', 'conversations', 'homes') ORDER BY name`,
        )
        .all()
        .map((row) => row.name);
    const v1 = new Database(':memory:');
    v1.exec(SCHEMA_V1);
    const path = join(tempDir(), 'indexes.db');
    await (await SqliteStore.open(path)).close();
    const current = new Database(path, { readonly: true });
    // deliveries_failed_since holds dead letters alone (status = 'failed'): a reply sent and done never writes it.
    expect(namesOn(current)).toEqual([...namesOn(v1), 'index deliveries_failed_since'].sort());
    // Nor a trigger anywhere that would make those writes touch the tools' tables.
    expect(current.prepare(`SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name IN ('processes', 'schedules', 'history')`).all()).toEqual([]);
    current.close();
    v1.close();
  });
});
