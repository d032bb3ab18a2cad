// The ProcessTable contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import type { ProcessRecord } from '../../../src/store/store.js';
import { chat, processRecord } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

const ROOMY = { maxPerDestination: 100, maxTotal: 100 };

const ids = (records: readonly { id: string }[]) => records.map((record) => record.id);

for (const implementation of storeImplementations()) describe(`${implementation.name} processes`, () => {
  const open = useStores(implementation);

  it('round-trips a record through its life: added, progressed, ended, removed', async () => {
    const { store } = await open();
    const added = { ...processRecord('p1'), checkIntervalMs: 30_000, instance: 'gw-1' };
    const { instance: _dropped, ...withoutInstance } = added;
    // The embedded store's one gateway runs every process: it keeps no instance.
    const record = implementation.traits.keepsInstance ? added : withoutInstance;
    expect(await store.processes.add(added, ROOMY)).toEqual({ status: 'added' });
    expect(await store.processes.get('p1')).toEqual(record);
    expect(await store.processes.get('nope')).toBeUndefined();
    await store.processes.progressed('p1', 3);
    expect(await store.processes.get('p1')).toEqual({ ...record, progressSent: 3 });
    await store.processes.ended('p1', { code: 0, endedAt: 9_000 });
    expect(await store.processes.get('p1')).toEqual({ ...record, progressSent: 3, exit: { code: 0, endedAt: 9_000 } });
    await store.processes.ended('p1', { signal: 'SIGKILL', endedAt: 9_500, note: 'n'.repeat(5_000) });
    expect((await store.processes.get('p1'))?.exit).toEqual({ signal: 'SIGKILL', endedAt: 9_500, note: 'n'.repeat(1_000) });
    await store.processes.remove('p1');
    expect(await store.processes.get('p1')).toBeUndefined();
    expect(await store.processes.all()).toEqual([]);
    // An update of a removed record does not bring it back half-made.
    await store.processes.progressed('p1', 4);
    await store.processes.ended('p1', { code: 1, endedAt: 10_000 });
    expect(await store.processes.get('p1')).toBeUndefined();
    expect(await store.processes.all()).toEqual([]);
  });

  it('lists all oldest first, and one chat and thread exactly', async () => {
    const { store } = await open();
    // Ids out of alphabetical order: the order is the order they were added in.
    for (const record of [processRecord('pb', 'a'), processRecord('pa', 'a', 't'), processRecord('pc', 'b'), processRecord('pd', 'a')]) {
      await store.processes.add(record, ROOMY);
    }
    expect(ids(await store.processes.all())).toEqual(['pb', 'pa', 'pc', 'pd']);
    expect(ids(await store.processes.ofDestination(chat('a')))).toEqual(['pb', 'pd']);
    expect(ids(await store.processes.ofDestination(chat('a', 't')))).toEqual(['pa']);
    expect(await store.processes.ofDestination(chat('zzz'))).toEqual([]);
  });

  it('refuses past the per-chat and the total cap without adding, and counts a removed one no more', async () => {
    const { store } = await open();
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.processes.add(processRecord('a1', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a2', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a3', 'a'), caps)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    // A thread is a destination of its own.
    expect(await store.processes.add(processRecord('at', 'a', 't'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(ids(await store.processes.all())).toEqual(['a1', 'a2', 'at']);
    await store.processes.remove('a1');
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'added' });
    // The removed one no longer counts toward its own chat's cap either.
    expect(await store.processes.add(processRecord('a4', 'a'), { maxPerDestination: 2, maxTotal: 10 })).toEqual({ status: 'added' });
  });

  it('checks many adds asked at once in the order asked, adding exactly up to the cap', async () => {
    const { store } = await open();
    await store.processes.add(processRecord('first', 'a'), { maxPerDestination: 5, maxTotal: 5 });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.processes.add(processRecord(`p${i}`, i % 2 === 0 ? 'a' : 'b'), { maxPerDestination: 3, maxTotal: 5 })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'added')).toHaveLength(4);
    expect(ids(await store.processes.all())).toEqual(['first', 'p0', 'p1', 'p2', 'p3']);
    expect(outcomes[4]).toEqual({ status: 'full', scope: 'destination', open: 3 });
    expect(outcomes[5]).toEqual({ status: 'full', scope: 'total', open: 5 });
  });

  it('adds exactly up to the caps when writers race for the last slots', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    await store.processes.add(processRecord('first', 'a'), { maxPerDestination: 5, maxTotal: 5 });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? store : second).processes.add(processRecord(`p${i}`, i % 4 < 2 ? 'a' : 'b'), { maxPerDestination: 3, maxTotal: 5 }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'added')).toHaveLength(4);
    const all = await store.processes.all();
    expect(all).toHaveLength(5);
    expect(all.filter((record) => record.destination.chatId === 'a')).toHaveLength(3);
    // One chat alone, the total roomy: its own cap holds under the race too.
    const oneChat = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : second).processes.add(processRecord(`q${i}`, 'c'), { maxPerDestination: 2, maxTotal: 100 })),
    );
    expect(oneChat.filter((outcome) => outcome.status === 'added')).toHaveLength(2);
    expect(await store.processes.ofDestination(chat('c'))).toHaveLength(2);
  });

  it('says an id is taken, only for that add of those asked at once, and keeps the record that has it', async () => {
    const { store } = await open();
    await store.processes.add(processRecord('p1'), ROOMY);
    const results = await Promise.all([
      store.processes.add(processRecord('p2'), ROOMY),
      store.processes.add({ ...processRecord('p1'), command: 'other' }, ROOMY),
      store.processes.add(processRecord('p3'), ROOMY),
    ]);
    expect(results).toEqual([{ status: 'added' }, { status: 'taken' }, { status: 'added' }]);
    expect((await store.processes.get('p1'))?.command).toBe(processRecord('p1').command);
    expect(ids(await store.processes.all())).toEqual(['p1', 'p2', 'p3']);
  });

  it('keeps every record, ended or not, through a close and a reopen', async () => {
    const subject = await open();
    const running = processRecord('running');
    const ended = { ...processRecord('ended'), notifyOnComplete: false, progressSent: 2 };
    await subject.store.processes.add(running, ROOMY);
    await subject.store.processes.add(ended, ROOMY);
    await subject.store.processes.ended('ended', { code: 3, endedAt: 2_000 });
    const again = await subject.reopen();
    expect(await again.processes.all()).toEqual([running, { ...ended, exit: { code: 3, endedAt: 2_000 } }]);
  });

  it('reports ended processes whose notice is not done, latest end first, of one chat if asked', async () => {
    const subject = await open();
    const { store } = subject;
    const ended = async (record: ProcessRecord, endedAt: number) => {
      await store.processes.add(record, ROOMY);
      await store.processes.ended(record.id, { endedAt, code: 0 });
    };
    await ended(processRecord('p-a', 'a'), 10);
    await ended(processRecord('p-b', 'b', 't/1'), 30);
    await ended(processRecord('p-c', 'a:b'), 20);
    await ended({ ...processRecord('p-quiet', 'a'), notifyOnComplete: false }, 5);
    await ended(processRecord('p-late', 'a'), 500);
    await ended(processRecord('p-done', 'a'), 15);
    await store.processes.add(processRecord('p-running', 'a'), ROOMY);
    await subject.notice('p-done', 'done');
    await subject.notice('p-a', 'failed');
    await subject.notice('p-c', 'sending');
    const unreported = async (query: { chatId?: string; threadId?: string; limit?: number }) =>
      ids((await store.processes.unreported({ before: 100, limit: 10, ...query })).map(({ record }) => record));
    expect(await unreported({})).toEqual(['p-b', 'p-c', 'p-a']);
    expect(await unreported({ limit: 2 })).toEqual(['p-b', 'p-c']);
    expect(await unreported({ limit: 0 })).toEqual([]);
    expect(await unreported({ limit: -1 })).toEqual([]);
    expect(await unreported({ chatId: 'a' })).toEqual(['p-a']);
    expect(await unreported({ chatId: 'a:b' })).toEqual(['p-c']);
    expect(await unreported({ threadId: 't/1' })).toEqual(['p-b']);
    expect(await unreported({ chatId: 'b', threadId: 'other' })).toEqual([]);
    // Each with its notice when the outbox holds one, and its exit as recorded.
    const [late, sending, failed] = await store.processes.unreported({ before: 100, limit: 10 });
    expect(late).toEqual({ record: { ...processRecord('p-b', 'b', 't/1'), exit: { endedAt: 30, code: 0 } } });
    expect(sending).toMatchObject({ record: { id: 'p-c', exit: { endedAt: 20, code: 0 } }, notice: { id: 'proc:p-c:done', kind: 'notification', status: 'sending' } });
    expect(failed).toMatchObject({ record: processRecord('p-a', 'a'), notice: { id: 'proc:p-a:done', status: 'failed', attempts: 1 } });
  });

  it('reports a damaged record with what can be read of it, and matches no chat with what cannot', async () => {
    const subject = await open();
    const { store } = subject;
    await store.processes.add(processRecord('p1', 'a'), ROOMY);
    await store.processes.ended('p1', { endedAt: 5 });
    await subject.damage('processes', 'p1', '{not json');
    const [lost] = await store.processes.unreported({ before: 100, limit: 10 });
    expect(lost?.record).toMatchObject({ id: 'p1', origin: undefined, destination: undefined, exit: { endedAt: 5 } });
    expect(lost?.record.command).toBe(processRecord('p1').command);
    expect(await store.processes.unreported({ before: 100, limit: 10, chatId: 'a' })).toEqual([]);
    // The gateway's own reads fail loudly rather than run a watcher in no chat.
    await expect(store.processes.get('p1')).rejects.toThrow();
    await expect(store.processes.all()).rejects.toThrow();
  });
});
