import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PRUNE_BATCH, SqliteStore } from '../../src/store/sqlite-store.js';
import type { StoredDelivery } from '../../src/store/store.js';
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
    const store = new SqliteStore(path, RETENTION_MS);
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
