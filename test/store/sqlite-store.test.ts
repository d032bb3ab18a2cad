import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { PRUNE_BATCH } from '../../src/store/sqlite-operations.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { StoredDelivery, StoredMessage } from '../../src/store/store.js';
import { webhookOrigin } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('sqlite-store');
const RETENTION_MS = 60_000;
const T0 = Date.UTC(2026, 10, 30, 12);
afterEach(() => vi.useRealTimers());

function delivery(id: string, createdAt: number): StoredDelivery {
  return {
    id,
    kind: 'reply',
    destination: { platform: 'webhook', chatId: 'c:1' },
    text: 'hi',
    origin: webhookOrigin('c:1', 'tl_session'),
    attempts: 0,
    createdAt,
  };
}

describe('SqliteStore outbox pruning', () => {
  it('deletes done deliveries past the retention in bounded batches, one a commit, and nothing else', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    const path = join(tempDir(), 'prune.db');
    const store = await SqliteStore.open(path, RETENTION_MS);
    const old = PRUNE_BATCH * 2 + PRUNE_BATCH / 2;
    for (let i = 0; i < old; i++) await store.outbox.add(delivery(`old-${i}`, T0), T0);
    await Promise.all(Array.from({ length: old }, (_, i) => store.outbox.markDone(`old-${i}`)));
    await store.outbox.add(delivery('old-pending', T0), T0);
    await store.outbox.add(delivery('old-failed', T0), T0);
    await store.outbox.markFailed('old-failed', 'gave up');

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
      await store.outbox.markDone(id);
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
    expect(count(`id IN ('old-pending', 'old-failed')`)).toBe(2);

    // That batch was not full: nothing more for a second.
    await store.outbox.add(delivery('old-late', T0), T0);
    vi.setSystemTime(T1 + 500);
    await store.outbox.markDone('old-late');
    expect(count(`id = 'old-late'`)).toBe(1);
    vi.setSystemTime(T1 + 1_020);
    await doneNow('new-5');
    expect(count(`id = 'old-late'`)).toBe(0);

    // A replayed turn's delivery within the retention is still recognised; a pruned id is not.
    expect(await store.outbox.add(delivery('new-1', Date.now()), Date.now())).toBe(false);
    expect(await store.outbox.add(delivery('old-0', Date.now()), Date.now())).toBe(true);
    await store.close();
  });
});

function message(id: string): StoredMessage {
  return { id, routing: webhookOrigin('c:1', 'tl_session'), text: `text of ${id}`, receivedAt: 1 };
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
    await store.messages.append(message('m-1'));
    // One turn, so one batch: the duplicate makes the transaction roll back.
    const results = await Promise.allSettled([
      store.messages.append(message('m-2')),
      store.messages.append(message('m-1')),
      store.messages.append(message('m-3')),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const refused = await storeFailure(Promise.reject((results[1] as PromiseRejectedResult).reason));
    expect(refused.message).toMatch(/refused a write: UNIQUE constraint failed/);
    expect((await store.messages.pending()).map((stored) => stored.id)).toEqual(['m-1', 'm-2', 'm-3']);
    await store.close();
  });

  it('answers what was asked before close, keeps it, and refuses what comes after', async () => {
    const path = join(tempDir(), 'closed.db');
    const store = await SqliteStore.open(path);
    const appended = store.messages.append(message('last'));
    const closing = [store.close(), store.close()];
    // Asked for after close() but before its commit: refused, not failed against a closed database.
    const early = storeFailure(store.messages.append(message('early')));
    await Promise.all(closing);
    await expect(appended).resolves.toBeUndefined();
    expect((await early).message).toContain('is closed');
    const error = await storeFailure(store.messages.append(message('late')));
    expect(error.message).toContain('is closed');

    const reopened = await SqliteStore.open(path);
    expect((await reopened.messages.pending()).map((stored) => stored.id)).toEqual(['last']);
    await reopened.close();
  });

  it('round-trips what the gateway stores', async () => {
    const store = await SqliteStore.open(':memory:');
    const origin = webhookOrigin('c:1', 'tl_session');
    await store.homes.set({ platform: 'webhook', chatId: 'home:1', threadId: 't/1' });
    expect(await store.homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home:1', threadId: 't/1' });
    expect(await store.homes.get('slack')).toBeUndefined();
    expect(await store.conversations.epoch('k')).toBe(0);
    expect(await store.conversations.next('k')).toBe(1);
    expect(await store.conversations.epoch('k')).toBe(1);
    const delivery = { id: 'd-1', kind: 'reply' as const, destination: { platform: 'webhook', chatId: 'c:1' }, text: 'hi', inReplyTo: 'm-9', origin, attempts: 0, createdAt: 5 };
    expect(await store.outbox.add(delivery, 10)).toBe(true);
    expect(await store.outbox.add(delivery, 10)).toBe(false);
    expect(await store.outbox.nextDueAt()).toBe(10);
    expect(await store.outbox.due(10, 5, new Set())).toEqual([delivery]);
    expect(await store.outbox.due(10, 5, new Set(['d-1']))).toEqual([]);
    await store.outbox.retryAt('d-1', 20, 'x'.repeat(2000));
    expect(await store.outbox.due(19, 5, new Set())).toEqual([]);
    expect(await store.outbox.pendingCount()).toBe(1);
    await store.outbox.markDone('d-1');
    expect(await store.outbox.pendingCount()).toBe(0);
    await store.close();
  });

  it('answers a cold conversation\'s epoch in the order it was asked, so messages of one chat keep their order', async () => {
    const store = await SqliteStore.open(':memory:');
    const answered: string[] = [];
    const first = store.conversations.epoch('cold');
    // Let the first read go to the store's thread, so the second would be a read of its own.
    await new Promise((resolve) => setImmediate(resolve));
    const second = store.conversations.epoch('cold').then(() => answered.push('second'));
    await first;
    const third = store.conversations.epoch('cold').then(() => answered.push('third'));
    await Promise.all([second, third]);
    expect(answered).toEqual(['second', 'third']);
    await store.close();
  });

  it('gives a store written before the lease flag one, so its pending deliveries are all sent at the next start', async () => {
    const path = join(tempDir(), 'old.db');
    const old = new Database(path);
    old.exec(`CREATE TABLE deliveries (id TEXT PRIMARY KEY, kind TEXT NOT NULL, destination TEXT NOT NULL, text TEXT NOT NULL,
      in_reply_to TEXT, origin TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, due_at INTEGER NOT NULL,
      last_error TEXT, created_at INTEGER NOT NULL)`);
    old
      .prepare(`INSERT INTO deliveries VALUES ('d-old', 'reply', ?, 'hi', NULL, ?, 'pending', 2, ?, NULL, 1)`)
      .run(JSON.stringify({ platform: 'webhook', chatId: 'c:1' }), JSON.stringify(webhookOrigin('c:1', 'tl_session')), T0 + 3_600_000);
    old.close();
    const store = await SqliteStore.open(path);
    await store.outbox.releaseLeases(T0);
    expect((await store.outbox.due(T0, 5, new Set())).map((row) => row.id)).toEqual(['d-old']);
    await store.close();
  });
});
