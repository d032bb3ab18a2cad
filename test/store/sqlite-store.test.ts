import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { PRUNE_BATCH } from '../../src/store/sqlite-operations.js';
import { MAX_ATTACHMENT_BYTES, formatDestination } from '../../src/session/delivery.js';
import { EPOCH_CACHE_SIZE, SqliteStore } from '../../src/store/sqlite-store.js';
import { SqliteConnection } from '../../src/store/sqlite-connection.js';
import type { NewDelivery, Store, StoredMessage } from '../../src/store/store.js';
import { routingOf } from './store.fixture.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const tempDir = useTempDir('sqlite-store');
const RETENTION_MS = 60_000;
const RETENTION = { doneMs: RETENTION_MS, failedMs: RETENTION_MS * 10 };
const T0 = Date.UTC(2026, 10, 30, 12);
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

function delivery(id: string, createdAt: number, chatId = id): NewDelivery {
  return {
    id,
    kind: 'reply',
    destination: { platform: 'webhook', chatId },
    text: 'hi',
    origin: routingOf('c:1', 'tl_session'),
    createdAt,
  };
}

const ROOMY = { destination: { platform: 'webhook', chatId: 'c:1' }, maxOpenPerDestination: 1_000, maxOpenTotal: 1_000 };
function append(store: Store, stored: StoredMessage) {
  return store.messages.accept(stored, ROOMY);
}

describe('SqliteStore outbox pruning', () => {
  it('deletes done deliveries past the retention in bounded batches, one a commit, and nothing else', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    const path = join(tempDir(), 'prune.db');
    const store = await SqliteStore.open(path, RETENTION);
    const old = PRUNE_BATCH * 2 + PRUNE_BATCH / 2;
    // Each its own chat, so each is claimed as it is added.
    for (let i = 0; i < old; i++) await store.outbox.add(delivery(`old-${i}`, T0), T0);
    await Promise.all(Array.from({ length: old }, (_, i) => store.outbox.markDone(`old-${i}`, T0)));
    await store.outbox.add(delivery('old-pending', T0, 'busy'), T0);
    await store.outbox.add(delivery('old-queued', T0, 'busy'), T0);
    await store.outbox.add(delivery('old-failed', T0), T0);
    await store.outbox.markFailed('old-failed', 'gave up', T0);

    const count = (where: string) => {
      const reader = new Database(path, { readonly: true });
      try {
        return (reader.prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE ${where}`).get() as { n: number }).n;
      } finally {
        reader.close();
      }
    };
    const doneNow = async (id: string) => {
      await store.outbox.add(delivery(id, Date.now()), Date.now());
      await store.outbox.markDone(id, Date.now());
    };
    // Nothing is old enough yet.
    expect(count(`status = 'done'`)).toBe(old);

    const T1 = T0 + RETENTION_MS * 2;
    const oldDone = () => count(`id LIKE 'old-%' AND status = 'done'`);
    vi.setSystemTime(T1);
    await Promise.all([doneNow('new-1'), doneNow('new-2')]); // one commit: one batch, not all
    expect(oldDone()).toBe(old - PRUNE_BATCH);
    vi.setSystemTime(T1 + 10); // the batch was full: the next one 10 ms later
    await doneNow('new-3');
    expect(oldDone()).toBe(old - 2 * PRUNE_BATCH);
    vi.setSystemTime(T1 + 20);
    await doneNow('new-4');
    expect(oldDone()).toBe(0);
    expect(count(`id LIKE 'new-%' AND status = 'done'`)).toBe(4);
    expect(count(`id IN ('old-pending', 'old-queued', 'old-failed')`)).toBe(3);

    // That batch was not full: nothing more for a second.
    vi.setSystemTime(T0);
    await store.outbox.add(delivery('old-late', T0), T0);
    await store.outbox.markDone('old-late', T0);
    vi.setSystemTime(T1 + 500);
    await doneNow('new-5');
    expect(count(`id = 'old-late'`)).toBe(1);
    vi.setSystemTime(T1 + 1_020);
    await doneNow('new-6');
    expect(count(`id = 'old-late'`)).toBe(0);

    // A replayed turn's delivery within the retention is still recognised; a pruned id is not.
    expect(await store.outbox.add(delivery('new-1', Date.now()), Date.now())).toBe('exists');
    expect(await store.outbox.add(delivery('old-0', Date.now()), Date.now())).toBe('claimed');
    // Dead letters are kept longer than done deliveries, then pruned too.
    expect(count(`id = 'old-failed'`)).toBe(1);
    vi.setSystemTime(T0 + RETENTION.failedMs + 5_000);
    await doneNow('new-7');
    expect(count(`id = 'old-failed'`)).toBe(0);
    await store.close();
  });
});

function message(id: string): StoredMessage {
  return { id, routing: routingOf('c:1', 'tl_session'), text: `text of ${id}`, receivedAt: 1 };
}

async function storeFailure(work: Promise<unknown>): Promise<ThreadlineError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ThreadlineError);
  expect((error as ThreadlineError).code).toBe('TL_STORE_FAILED');
  return error as ThreadlineError;
}

describe('SqliteStore failures and round trips', () => {
  it('says which path it cannot open and what to check', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const error = await storeFailure(SqliteStore.open(join(file, 'threadline.db')));
    expect(error.message).toContain(join(file, 'threadline.db'));
    expect(error.message).toContain('THREADLINE_DATA_DIR');
  });

  it('fails only the caller whose write was refused; the others in the same commit are kept', async () => {
    const path = join(tempDir(), 'refused.db');
    const store = await SqliteStore.open(path);
    await append(store, message('m-1'));
    // One turn, so one batch: the duplicate makes the transaction roll back.
    const results = await Promise.allSettled([append(store, message('m-2')), append(store, message('m-1')), append(store, message('m-3'))]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const refused = await storeFailure(Promise.reject((results[1] as PromiseRejectedResult).reason));
    expect(refused.message).toMatch(/^The store refused a write: UNIQUE constraint failed.*\(SQLITE_CONSTRAINT_PRIMARYKEY\)$/);
    // The message may reach an HTTP answer: the file's path is for the log (StoreWrites), not for callers.
    expect(refused.message).not.toContain(path);
    expect((await store.messages.pending()).map((stored) => stored.id)).toEqual(['m-1', 'm-2', 'm-3']);
    await store.close();
  });

  it('answers what was asked before close, keeps it, and refuses what comes after', async () => {
    const path = join(tempDir(), 'closed.db');
    const store = await SqliteStore.open(path);
    const appended = append(store, message('last'));
    const closing = [store.close(), store.close()];
    // Asked for after close() but before its commit: refused, not failed against a closed database.
    const early = storeFailure(append(store, message('early')));
    await Promise.all(closing);
    await expect(appended).resolves.toEqual({ status: 'accepted' });
    expect((await early).message).toContain('is closed');
    const error = await storeFailure(append(store, message('late')));
    expect(error.message).toBe('The store is closed');

    const reopened = await SqliteStore.open(path);
    expect((await reopened.messages.pending()).map((stored) => stored.id)).toEqual(['last']);
    await reopened.close();
  });

  it('round-trips a delivery through add, a retry under its lease, claim and done', async () => {
    const store = await SqliteStore.open(':memory:');
    const origin = routingOf('c:1', 'tl_session');
    const sent = { id: 'd-1', kind: 'reply' as const, destination: { platform: 'webhook', chatId: 'c:1' }, text: 'hi', inReplyTo: 'm-9', origin, createdAt: 5 };
    expect(await store.outbox.add(sent, 10)).toBe('claimed');
    expect(await store.outbox.add(sent, 10)).toBe('exists');
    const [record] = await store.outbox.list({ limit: 5 });
    expect(record).toEqual({ ...sent, attempts: 0, attemptsSince: 5, status: 'sending', dueAt: 5, leaseUntil: 10 });
    // An outcome under another lease (a sender whose claim ended) changes nothing.
    await store.outbox.retryAt('d-1', 20, 'stale', 11);
    expect((await store.outbox.list({ limit: 5 }))[0]).toMatchObject({ status: 'sending', attempts: 0 });
    await store.outbox.retryAt('d-1', 20, 'x'.repeat(2000), 10);
    expect((await store.outbox.claim(19, 5, 100)).deliveries).toEqual([]);
    const claimed = await store.outbox.claim(20, 5, 100);
    expect(claimed.deliveries).toEqual([{ ...sent, attempts: 1, attemptsSince: 5, status: 'sending', dueAt: 20, leaseUntil: 100, lastError: 'x'.repeat(1000) }]);
    expect(claimed.nextAt).toBe(100);
    expect((await store.outbox.pressure(1)).open).toBe(1);
    expect(await store.outbox.markDone('d-1', 10)).toBe(false);
    expect((await store.outbox.pressure(1)).open).toBe(1);
    await store.outbox.markDone('d-1', 100);
    expect(await store.outbox.pressure(1)).toEqual({ open: 0, fullDestinations: 0 });
    expect((await store.outbox.claim(1_000, 5, 2_000)).nextAt).toBeUndefined();
    await store.close();
  });

  it('round-trips a delivery\'s attachment through add, claim and list', async () => {
    const store = await SqliteStore.open(':memory:');
    const voice = { filename: 'reply.ogg', contentType: 'audio/ogg', dataBase64: Buffer.alloc(MAX_ATTACHMENT_BYTES, 7).toString('base64') };
    const first = { ...delivery('d-1', 1, 'a'), attachment: voice };
    const second = { ...delivery('d-2', 2, 'a'), attachment: { ...voice, filename: 'second.ogg' } };
    expect(await store.outbox.add(first, 10)).toBe('claimed');
    expect(await store.outbox.add(second, 10)).toBe('queued');
    expect(await store.outbox.add(delivery('d-plain', 3, 'b'), 10)).toBe('claimed');
    const listed = await store.outbox.list({ limit: 5 });
    expect(listed.map((record) => record.attachment?.filename)).toEqual([undefined, 'second.ogg', 'reply.ogg']);
    expect(listed[2]!.attachment).toEqual(voice);
    expect(listed[0]).not.toHaveProperty('attachment');
    await store.outbox.markDone('d-1', 10);
    const [claimed] = (await store.outbox.claim(5, 5, 20)).deliveries;
    expect(claimed).toMatchObject({ id: 'd-2', attachment: second.attachment });
    await store.close();
  });

  it('round-trips the live message a delivery replaces through add, claim and list', async () => {
    const store = await SqliteStore.open(':memory:');
    expect(await store.outbox.add({ ...delivery('d-live', 1, 'a'), replaces: '1042' }, 10)).toBe('claimed');
    expect(await store.outbox.add({ ...delivery('d-next', 2, 'a'), replaces: '1043' }, 10)).toBe('queued');
    expect(await store.outbox.add(delivery('d-plain', 3, 'b'), 10)).toBe('claimed');
    const listed = await store.outbox.list({ limit: 5 });
    expect(listed.map((record) => record.replaces)).toEqual([undefined, '1043', '1042']);
    expect(listed[0]).not.toHaveProperty('replaces');
    await store.outbox.markDone('d-live', 10);
    const [claimed] = (await store.outbox.claim(5, 5, 20)).deliveries;
    expect(claimed).toMatchObject({ id: 'd-next', replaces: '1043' });
    await store.close();
  });

  it('lists one chat by its exact id, threads included, before the limit applies', async () => {
    const store = await SqliteStore.open(':memory:');
    const to = (id: string, chatId: string, threadId?: string) =>
      store.outbox.add({ ...delivery(id, 1), destination: { platform: 'webhook', chatId, ...(threadId === undefined ? {} : { threadId }) } }, 2);
    await to('mine', 'a');
    await to('mine-thread', 'a', 't');
    await to('prefix', 'a:b');
    await to('thread-named-a', 'x', 'a');
    await to('percent', 'a%');
    const ids = async (limit: number) => (await store.outbox.list({ chatId: 'a', limit })).map((record) => record.id);
    expect(await ids(10)).toEqual(['mine-thread', 'mine']);
    expect(await ids(1)).toEqual(['mine-thread']);
    await store.close();
  });

  it('says when the oldest open delivery began its attempts, whether it is being sent, queued or due again', async () => {
    const store = await SqliteStore.open(':memory:');
    expect((await store.outbox.pressure(10)).oldestOpenSince).toBeUndefined();
    expect(await store.outbox.add(delivery('d-sending', 100, 'a'), 1_000)).toBe('claimed');
    expect(await store.outbox.add(delivery('d-queued', 200, 'a'), 1_000)).toBe('queued');
    expect((await store.outbox.pressure(10)).oldestOpenSince).toBe(100);
    await store.outbox.retryAt('d-sending', 5_000, 'busy', 1_000);
    expect((await store.outbox.pressure(10)).oldestOpenSince).toBe(100);
    await store.outbox.markFailed('d-sending', 'gave up', 1_000); // not under its lease any more: nothing changes
    expect((await store.outbox.claim(5_000, 5, 6_000)).deliveries.map((row) => row.id)).toEqual(['d-sending']);
    await store.outbox.markFailed('d-sending', 'gave up', 6_000);
    expect((await store.outbox.pressure(10)).oldestOpenSince).toBe(200);
    await store.outbox.markDone('d-queued', 6_000); // pending, never claimed: not done
    expect((await store.outbox.claim(7_000, 5, 8_000)).deliveries.map((row) => row.id)).toEqual(['d-queued']);
    await store.outbox.markDone('d-queued', 8_000);
    expect(await store.outbox.pressure(10)).toEqual({ open: 0, fullDestinations: 0 });
    await store.close();
  });

  it('waits for another connection\'s write (the CLI\'s) instead of failing a transaction that has read', async () => {
    const path = join(tempDir(), 'busy.db');
    const store = await SqliteStore.open(path);
    // Another process, as the CLI is: this one's event loop waits on the lock while it is held.
    const holder = spawn(
      process.execPath,
      ['-e', `const db = new (require('better-sqlite3'))(process.argv[1]); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => { db.exec('COMMIT'); db.close(); }, 200);`, path],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await once(holder.stdout!, 'data');
    const accepted = store.messages.accept(message('m-1'), ROOMY);
    const added = store.outbox.add(delivery('d-1', 1), 2);
    expect(await accepted).toEqual({ status: 'accepted' });
    expect(await added).toBe('claimed');
    await store.close();
  });

  it('answers a cold conversation\'s epoch in the order it was asked, so messages of one chat keep their order', async () => {
    const store = await SqliteStore.open(':memory:');
    const answered: string[] = [];
    const first = store.conversations.epoch('cold');
    // Let the first read be committed, so the second would be a read of its own.
    await new Promise((resolve) => setImmediate(resolve));
    const second = store.conversations.epoch('cold').then(() => answered.push('second'));
    await first;
    const third = store.conversations.epoch('cold').then(() => answered.push('third'));
    await Promise.all([second, third]);
    expect(answered).toEqual(['second', 'third']);
    await store.close();
  });

  it('forgets a failed epoch read at once, so the next message of the conversation reads again', async () => {
    const store = await SqliteStore.open(':memory:');
    vi.spyOn(SqliteConnection.prototype, 'call').mockRejectedValueOnce(new Error('disk I/O error'));
    await expect(store.conversations.epoch('k')).rejects.toThrow('disk I/O error');
    expect(await store.conversations.epoch('k')).toBe(0);
    await store.close();
  });

  it('reads an epoch again only once its conversation is the least recently used past the cache bound', async () => {
    const store = await SqliteStore.open(':memory:');
    // Epoch reads are answered here, not by SQLite: only whether they are asked for counts.
    let reads = 0;
    const calls = vi.spyOn(SqliteConnection.prototype, 'call').mockImplementation((...[name]: unknown[]) => {
      if (name !== 'epoch') throw new Error(`unexpected ${name}`);
      reads++;
      return Promise.resolve(0) as never;
    });
    const readsOf = async (work: () => Promise<unknown>) => {
      const before = reads;
      await work();
      return reads - before;
    };
    const epoch = (i: number) => store.conversations.epoch(`k${i}`);
    expect(await readsOf(() => epoch(0))).toBe(1);
    expect(await readsOf(() => epoch(0))).toBe(0);
    expect(await readsOf(() => Promise.all(Array.from({ length: EPOCH_CACHE_SIZE - 1 }, (_, i) => epoch(i + 1))))).toBe(EPOCH_CACHE_SIZE - 1);
    await epoch(0); // used again: k1 is now the least recently used
    expect(await readsOf(() => epoch(EPOCH_CACHE_SIZE))).toBe(1);
    expect(await readsOf(() => epoch(0))).toBe(0);
    expect(await readsOf(() => epoch(1))).toBe(1);
    calls.mockRestore();
    await store.close();
  });

  it('moves a store of an earlier version over: destinations respelled, open deliveries kept in order, due at once when they were being sent', async () => {
    const path = join(tempDir(), 'old.db');
    const old = new Database(path);
    old.exec(`CREATE TABLE deliveries (id TEXT PRIMARY KEY, kind TEXT NOT NULL, destination TEXT NOT NULL, text TEXT NOT NULL,
      in_reply_to TEXT, origin TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, due_at INTEGER NOT NULL,
      last_error TEXT, created_at INTEGER NOT NULL, leased INTEGER NOT NULL DEFAULT 1);
      CREATE INDEX deliveries_due ON deliveries (status, due_at);
      CREATE TABLE homes (platform TEXT PRIMARY KEY, destination TEXT NOT NULL);`);
    const insert = old.prepare(`INSERT INTO deliveries VALUES (?, 'reply', ?, 'hi', NULL, ?, ?, 2, ?, NULL, 1, ?)`);
    const origin = JSON.stringify(routingOf('c:1', 'tl_session'));
    const chat = JSON.stringify({ platform: 'webhook', chatId: 'c:1' });
    insert.run('d-sending', chat, origin, 'pending', T0 + 60_000, 1);
    insert.run('d-behind', chat, origin, 'pending', T0, 1);
    insert.run('d-waiting', JSON.stringify({ platform: 'webhook', chatId: 'other', threadId: 't' }), origin, 'pending', T0 + 3_600_000, 0);
    insert.run('d-done', chat, origin, 'done', T0, 0);
    old.prepare(`INSERT INTO homes VALUES ('webhook', ?)`).run(JSON.stringify({ platform: 'webhook', chatId: 'home' }));
    old.close();
    const store = await SqliteStore.open(path);
    expect(await store.homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home' });
    expect(await store.outbox.pressure(2)).toMatchObject({ open: 3, fullDestinations: 1 });
    const first = await store.outbox.claim(T0, 5, T0 + 1_000);
    expect(first.deliveries.map((row) => [row.id, formatDestination(row.destination)])).toEqual([['d-sending', 'webhook:c%3A1']]);
    expect(first.nextAt).toBe(T0 + 1_000);
    await store.outbox.markDone('d-sending', T0 + 1_000);
    expect((await store.outbox.claim(T0, 5, T0 + 1_000)).deliveries.map((row) => row.id)).toEqual(['d-behind']);
    await store.outbox.markDone('d-behind', T0 + 1_000);
    expect((await store.outbox.claim(T0 + 3_600_000, 5, T0 + 3_700_000)).deliveries.map((row) => row.id)).toEqual(['d-waiting']);
    await store.close();
  });
});
