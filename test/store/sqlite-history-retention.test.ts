import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRUNE_BATCH } from '../../src/store/sqlite-operations.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { HistoryEntry } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat } from './store.fixture.js';

const tempDir = useTempDir('sqlite-history-retention');
const ROOM = chat('c:1');

function entry(text: string, at = 1, role: HistoryEntry['role'] = 'user'): HistoryEntry {
  return { role, text, at };
}
const texts = (entries: readonly HistoryEntry[]) => entries.map((stored) => stored.text);

describe('SqliteStore history retention', () => {
  it('prunes entries older than the retention in bounded batches in the prune loop, sessions and mirrored alike', async () => {
    const path = join(tempDir(), 'prune.db');
    const HISTORY_MS = 60_000;
    const T0 = Date.UTC(2026, 10, 30, 12);
    const store = await SqliteStore.open(path, { doneMs: 1, failedMs: 1, historyMs: HISTORY_MS });
    const old = PRUNE_BATCH + PRUNE_BATCH / 2;
    await store.history.append('gone', ROOM, Array.from({ length: old }, (_, i) => entry(`old-${i}`, T0)), old);
    await store.history.mirror(chat('quiet'), entry('old mirrored', T0), 10);
    await store.history.append('kept', ROOM, [entry('recent', T0 + HISTORY_MS)], 10);
    const count = () => {
      const reader = new Database(path, { readonly: true });
      try {
        return (reader.prepare('SELECT COUNT(*) AS n FROM history').get() as { n: number }).n;
      } finally {
        reader.close();
      }
    };
    expect(count()).toBe(old + 2);
    const T1 = T0 + HISTORY_MS + 1;
    // The outbox's claim runs the prune loop: one batch a commit.
    await store.outbox.claim(T1, 1, T1);
    expect(count()).toBe(old + 2 - PRUNE_BATCH);
    await store.outbox.claim(T1 + 10, 1, T1 + 10); // that batch was full: the next 10 ms later
    expect(count()).toBe(1);
    expect(texts(await store.history.recent('kept', ROOM, 10))).toEqual(['recent']);
    expect(await store.history.recent('any', chat('quiet'), 10)).toEqual([]);
    await store.close();
  });
});
