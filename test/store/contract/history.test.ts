// The HistoryLog contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../../src/store/store.js';
import { chat } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

const ROOM = chat('c:1');

function entry(text: string, at = 1, role: HistoryEntry['role'] = 'user'): HistoryEntry {
  return { role, text, at };
}
const texts = (entries: readonly HistoryEntry[]) => entries.map((stored) => stored.text);

for (const implementation of storeImplementations()) describe(`${implementation.name} history`, () => {
  const open = useStores(implementation);

  it('appends in order and keeps each session\'s newest entries only, other sessions untouched', async () => {
    const { store } = await open();
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
    // Keeping none keeps none.
    await store.history.append('s2', ROOM, [entry('gone')], 0);
    expect(await store.history.recent('s2', ROOM, 10)).toEqual([]);
  });

  it('shows mirrored text to every session of its chat and thread, and to no other', async () => {
    const { store } = await open();
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
  });

  it('keeps each chat\'s newest mirrored entries only, apart from the sessions\' own', async () => {
    const { store } = await open();
    await store.history.append('s1', ROOM, [entry('own')], 10);
    for (const text of ['m1', 'm2', 'm3', 'm4']) await store.history.mirror(ROOM, entry(text), 2);
    await store.history.mirror(chat('c:2'), entry('elsewhere'), 2);
    expect(texts(await store.history.recent('s1', ROOM, 10))).toEqual(['own', 'm3', 'm4']);
    expect(texts(await store.history.recent('s1', chat('c:2'), 10))).toEqual(['own', 'elsewhere']);
  });

  it('answers the newest entries up to the limit, both kinds interleaved in the order written, oldest first', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    await store.history.append('s1', ROOM, [entry('s-1'), entry('s-2')], 10);
    await second.history.mirror(ROOM, entry('m-1'), 10);
    await store.history.append('s1', ROOM, [entry('s-3')], 10);
    await second.history.mirror(ROOM, entry('m-2'), 10);
    expect(texts(await store.history.recent('s1', ROOM, 3))).toEqual(['m-1', 's-3', 'm-2']);
    expect(texts(await store.history.recent('s1', ROOM, 100))).toEqual(['s-1', 's-2', 'm-1', 's-3', 'm-2']);
    expect(await store.history.recent('s1', ROOM, 0)).toEqual([]);
    expect(await store.history.recent('s1', ROOM, -1)).toEqual([]);
  });

  it('keeps everything through a close and a reopen, and appends after it in order', async () => {
    const subject = await open();
    await subject.store.history.append('s1', ROOM, [entry('one'), entry('two')], 10);
    await subject.store.history.mirror(ROOM, entry('mirrored'), 10);
    const again = await subject.reopen();
    await again.history.append('s1', ROOM, [entry('three')], 10);
    expect(texts(await again.history.recent('s1', ROOM, 10))).toEqual(['one', 'two', 'mirrored', 'three']);
  });
});
