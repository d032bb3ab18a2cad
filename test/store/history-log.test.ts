import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRUNE_BATCH } from '../../src/store/sqlite-operations.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { HistoryEntry } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat } from './store.fixture.js';

const tempDir = useTempDir('history-log');
const ROOM = chat('c:1');

function entry(text: string, at = 1, role: HistoryEntry['role'] = 'user'): HistoryEntry {
  return { role, text, at };
}
const texts = (entries: readonly HistoryEntry[]) => entries.map((stored) => stored.text);

describe('SqliteStore history', () => {
  it('appends in order and keeps each session\'s newest entries only, other sessions untouched', async () => {
    const store = await SqliteStore.open(':memory:');
    const full: HistoryEntry = { role: 'assistant', text: 'calling', extra: '{"toolCalls":[{"id":"1"}]}', at: 7 };
    await store.history.append('s1', ROOM, [entry('u1'), full, { role: 'tool', text: 'done', extra: '{"callId":"1"}', at: 8 }], 10);
    await store.history.append('s2', ROOM, [entry('other')], 10);
    expect(await store.history.recent('s1', ROOM, 10)).toEqual([entry('u1'), full, { role: 'tool', text: 'done', extra: '{"callId":"1"}', at: 8 }]);
    await store.history.append('s1', ROOM, [entry('u2'), entry('u3')], 3);
    expect(texts(await store.history.recent('s1', ROOM, 10))).toEqual(['done', 'u2', 'u3']);
    // More in one append than it keeps: the newest of them.
    await store.history.append('s1', ROOM, [entry('a'), entry('b'), entry('c'), entry('d')], 2);
    expect(texts(await store.history.recent('s1', ROOM, 10))).toEqual(['c', 'd']);
    expect(texts(await store.history.recent('s2', ROOM, 10))).toEqual(['other']);
    expect(await store.history.recent('s3', ROOM, 10)).toEqual([]);
    await store.close();
  });

  it('shows mirrored text to every session of its chat and thread, and to no other', async () => {
    const store = await SqliteStore.open(':memory:');
    const thread = chat('c:1', 't');
    await store.history.append('s1', ROOM, [entry('before')], 10);
    await store.history.mirror(ROOM, { role: 'assistant', text: 'sent from cron', source: 'telegram', at: 5 }, 10);
    await store.history.append('s1', ROOM, [entry('after')], 10);
    await store.history.mirror(thread, entry('to the thread'), 10);
    expect(await store.history.recent('s1', ROOM, 10)).toEqual([
      entry('before'),
      { role: 'assistant', text: 'sent from cron', source: 'telegram', at: 5 },
      entry('after'),
    ]);
    // A new conversation (/new) in the same chat sees it too; the thread and other chats do not.
    expect(texts(await store.history.recent('s1-epoch-2', ROOM, 10))).toEqual(['sent from cron']);
    expect(texts(await store.history.recent('s1', thread, 10))).toEqual(['before', 'after', 'to the thread']);
    expect(await store.history.recent('s9', chat('c:2'), 10)).toEqual([]);
    await store.close();
  });

  it('keeps each chat\'s newest mirrored entries only, apart from the sessions\' own', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.history.append('s1', ROOM, [entry('own')], 10);
    for (const text of ['m1', 'm2', 'm3', 'm4']) await store.history.mirror(ROOM, entry(text), 2);
    await store.history.mirror(chat('c:2'), entry('elsewhere'), 2);
    expect(texts(await store.history.recent('s1', ROOM, 10))).toEqual(['own', 'm3', 'm4']);
    expect(texts(await store.history.recent('s1', chat('c:2'), 10))).toEqual(['own', 'elsewhere']);
    await store.close();
  });

  it('answers the newest entries up to the limit, both kinds interleaved, oldest first', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.history.append('s1', ROOM, [entry('s-1'), entry('s-2')], 10);
    await store.history.mirror(ROOM, entry('m-1'), 10);
    await store.history.append('s1', ROOM, [entry('s-3')], 10);
    await store.history.mirror(ROOM, entry('m-2'), 10);
    expect(texts(await store.history.recent('s1', ROOM, 3))).toEqual(['m-1', 's-3', 'm-2']);
    expect(texts(await store.history.recent('s1', ROOM, 100))).toEqual(['s-1', 's-2', 'm-1', 's-3', 'm-2']);
    expect(await store.history.recent('s1', ROOM, 0)).toEqual([]);
    expect(await store.history.recent('s1', ROOM, -1)).toEqual([]);
    await store.close();
  });

  it('keeps everything through a close and a reopen, and appends after it in order', async () => {
    const path = join(tempDir(), 'history.db');
    const first = await SqliteStore.open(path);
    await first.history.append('s1', ROOM, [entry('one'), entry('two')], 10);
    await first.history.mirror(ROOM, entry('mirrored'), 10);
    await first.close();
    const again = await SqliteStore.open(path);
    await again.history.append('s1', ROOM, [entry('three')], 10);
    expect(texts(await again.history.recent('s1', ROOM, 10))).toEqual(['one', 'two', 'mirrored', 'three']);
    await again.close();
  });

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
