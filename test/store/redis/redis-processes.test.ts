import { describe, expect, it } from 'vitest';
import type { DeliveryState, ProcessRecord } from '../../../src/store/store.js';
import { useRedis } from '../../helpers/redis.js';
import { chat, routingOf } from '../store.fixture.js';
import { useRedisStores } from './redis-store.fixture.js';

const redis = useRedis();
const openStore = useRedisStores(redis);
const ROOMY = { maxPerDestination: 100, maxTotal: 100 };

function processRecord(id: string, chatId = 'c:1', threadId?: string): ProcessRecord {
  return {
    id,
    origin: routingOf(chatId, 'tl_session', threadId),
    destination: chat(chatId, threadId),
    command: `sleep 5 # ${id}`,
    pid: 4242,
    startedAt: 1_000,
    notifyOnComplete: true,
    progressSent: 0,
  };
}
const ids = (records: readonly { id: string }[]) => records.map((record) => record.id);

describe('RedisStore processes', () => {
  it('round-trips a record through its life: added, progressed, ended, removed', async () => {
    const { store } = openStore();
    const record = { ...processRecord('p1'), checkIntervalMs: 30_000, instance: 'gw-1' };
    expect(await store.processes.add(record, ROOMY)).toEqual({ status: 'added' });
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
  });

  it('lists all oldest first, and one chat and thread exactly', async () => {
    const { store } = openStore();
    for (const record of [processRecord('pb', 'a'), processRecord('pa', 'a', 't'), processRecord('pc', 'b'), processRecord('pd', 'a')]) {
      await store.processes.add(record, ROOMY);
    }
    expect(ids(await store.processes.all())).toEqual(['pb', 'pa', 'pc', 'pd']);
    expect(ids(await store.processes.ofDestination(chat('a')))).toEqual(['pb', 'pd']);
    expect(ids(await store.processes.ofDestination(chat('a', 't')))).toEqual(['pa']);
    expect(await store.processes.ofDestination(chat('zzz'))).toEqual([]);
  });

  it('refuses past the per-chat and the total cap without adding, and counts a removed one no more', async () => {
    const { store } = openStore();
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.processes.add(processRecord('a1', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a2', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a3', 'a'), caps)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(await store.processes.add(processRecord('at', 'a', 't'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(ids(await store.processes.all())).toEqual(['a1', 'a2', 'at']);
    await store.processes.remove('a1');
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'added' });
    // The removed one no longer counts toward its own chat's cap either.
    expect(await store.processes.add(processRecord('a4', 'a'), { maxPerDestination: 2, maxTotal: 10 })).toEqual({ status: 'added' });
  });

  it('adds exactly up to the caps when two instances race for the last slots', async () => {
    const { store, another } = openStore();
    const second = another();
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

  it('says an id is taken, and keeps the record that has it', async () => {
    const { store } = openStore();
    await store.processes.add(processRecord('p1'), ROOMY);
    expect(await store.processes.add({ ...processRecord('p1'), command: 'other' }, ROOMY)).toEqual({ status: 'taken' });
    expect((await store.processes.get('p1'))?.command).toBe(processRecord('p1').command);
    expect(ids(await store.processes.all())).toEqual(['p1']);
  });

  it('reports ended processes whose notice is not done, latest end first, of one chat if asked', async () => {
    const { store, outbox } = openStore();
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
    outbox.statuses.set('proc:p-done:done', 'done');
    outbox.statuses.set('proc:p-a:done', 'failed');
    const unreported = async (query: { chatId?: string; threadId?: string; limit?: number }) =>
      (await store.processes.unreported({ before: 100, limit: 10, ...query })).map(({ record }) => record.id);
    expect(await unreported({})).toEqual(['p-b', 'p-c', 'p-a']);
    expect(await unreported({ limit: 2 })).toEqual(['p-b', 'p-c']);
    expect(await unreported({ limit: -1 })).toEqual([]);
    expect(await unreported({ chatId: 'a' })).toEqual(['p-a']);
    expect(await unreported({ chatId: 'a:b' })).toEqual(['p-c']);
    expect(await unreported({ threadId: 't/1' })).toEqual(['p-b']);
    expect(await unreported({ chatId: 'b', threadId: 'other' })).toEqual([]);
    const [first] = await store.processes.unreported({ before: 100, limit: 10, chatId: 'a' });
    // The stand-in outbox tells statuses only: no notice is made up.
    expect(first).toEqual({ record: { ...processRecord('p-a', 'a'), exit: { endedAt: 10, code: 0 } } });
  });

  it('reports the notice with its process when the outbox can tell its state', async () => {
    const notice: DeliveryState = {
      id: 'proc:p1:done',
      kind: 'send',
      status: 'pending',
      destination: 'webhook:c%3A1',
      origin: routingOf('c:1'),
      attempts: 2,
      attemptsSince: 9,
      dueAt: 12,
    };
    const { store } = openStore({ noticeStates: async (asked) => new Map(asked.includes(notice.id) ? [[notice.id, notice]] : []) });
    await store.processes.add(processRecord('p1'), ROOMY);
    await store.processes.ended('p1', { endedAt: 9, code: 1 });
    expect(await store.processes.unreported({ before: 100, limit: 10 })).toEqual([
      { record: { ...processRecord('p1'), exit: { endedAt: 9, code: 1 } }, notice },
    ]);
  });

  it('reports a damaged record with what can be read of it, and matches no chat with what cannot', async () => {
    const { store, keys, redis: connection } = openStore();
    await store.processes.add(processRecord('p1', 'a'), ROOMY);
    await store.processes.ended('p1', { endedAt: 5 });
    await connection.hset(keys.key('processes', 'record', 'p1'), 'origin', '{not json', 'destination', 'no-colon');
    const [lost] = await store.processes.unreported({ before: 100, limit: 10 });
    expect(lost?.record).toMatchObject({ id: 'p1', origin: undefined, destination: undefined, exit: { endedAt: 5 } });
    expect(await store.processes.unreported({ before: 100, limit: 10, chatId: 'a' })).toEqual([]);
    // The gateway's own read fails loudly rather than run a watcher in no chat.
    await expect(store.processes.get('p1')).rejects.toThrow();
  });
});
