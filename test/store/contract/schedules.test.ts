// The ScheduleTable contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import type { ScheduleRecord } from '../../../src/store/store.js';
import { chat, routingOf } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

const ROOMY = { maxPerDestination: 100, maxTotal: 100 };

function schedule(id: string, nextAt: number, chatId = 'c:1', threadId?: string): ScheduleRecord {
  return {
    id,
    origin: routingOf(chatId, 'tl_session', threadId),
    destination: chat(chatId, threadId),
    target: 'origin',
    text: `run of ${id}`,
    nextAt,
    createdAt: 1,
  };
}
const ids = (records: readonly { id: string }[]) => records.map((record) => record.id);

for (const implementation of storeImplementations()) describe(`${implementation.name} schedules`, () => {
  const open = useStores(implementation);

  it('round-trips reminders and cron jobs', async () => {
    const { store } = await open();
    const reminder = schedule('r1', 500);
    const job = { ...schedule('c1', 600, 'c:1', 't/1'), target: 'home:telegram', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' };
    expect(await store.schedules.add(reminder, ROOMY)).toEqual({ status: 'added' });
    expect(await store.schedules.add(job, ROOMY)).toEqual({ status: 'added' });
    expect(await store.schedules.get('r1')).toEqual(reminder);
    expect(await store.schedules.get('c1')).toEqual(job);
    expect(await store.schedules.get('nope')).toBeUndefined();
  });

  it('says an id is taken instead of failing or overwriting the job that has it', async () => {
    const { store } = await open();
    const first = schedule('same', 500);
    expect(await store.schedules.add(first, ROOMY)).toEqual({ status: 'added' });
    expect(await store.schedules.add({ ...schedule('same', 900), text: 'another' }, ROOMY)).toEqual({ status: 'taken' });
    expect(await store.schedules.get('same')).toEqual(first);
    expect(await store.schedules.nextAt()).toBe(500);
  });

  it('answers what is due earliest first up to a limit, when the next is due, and each chat by due time', async () => {
    const { store } = await open();
    expect(await store.schedules.nextAt()).toBeUndefined();
    expect(await store.schedules.due(1_000, 10)).toEqual([]);
    for (const record of [schedule('late', 300, 'a'), schedule('early', 100, 'b'), schedule('mid', 200, 'a'), schedule('future', 900, 'a', 't'), schedule('tie', 200, 'a')]) {
      await store.schedules.add(record, ROOMY);
    }
    expect(await store.schedules.nextAt()).toBe(100);
    expect(ids(await store.schedules.due(300, 10))).toEqual(['early', 'mid', 'tie', 'late']);
    expect(ids(await store.schedules.due(300, 2))).toEqual(['early', 'mid']);
    expect(ids(await store.schedules.due(99, 10))).toEqual([]);
    expect(ids(await store.schedules.due(300, -1))).toEqual([]);
    expect(ids(await store.schedules.ofDestination(chat('a')))).toEqual(['mid', 'tie', 'late']);
    expect(ids(await store.schedules.ofDestination(chat('a', 't')))).toEqual(['future']);
    // Every record, due or not: what a start of the schedule runner reconciles.
    expect(ids(await store.schedules.all())).toEqual(['early', 'mid', 'tie', 'late', 'future']);
  });

  it('advances a run only while it is still due at the time it ran: of two asked at once, the first', async () => {
    const { store } = await open();
    await store.schedules.add({ ...schedule('job', 100), cron: '* * * * *' }, ROOMY);
    const [first, second] = await Promise.all([store.schedules.advance('job', 100, 160), store.schedules.advance('job', 100, 160)]);
    expect([first, second]).toEqual([true, false]);
    expect((await store.schedules.get('job'))?.nextAt).toBe(160);
    expect(await store.schedules.advance('job', 100, 999)).toBe(false);
    expect((await store.schedules.get('job'))?.nextAt).toBe(160);
    expect(await store.schedules.nextAt()).toBe(160);
    expect(ids(await store.schedules.ofDestination(chat('c:1')))).toEqual(['job']);
    expect(await store.schedules.due(159, 10)).toEqual([]);
    // No next run: its last run removes it, once, from every index.
    expect(await store.schedules.advance('job', 150, undefined)).toBe(false);
    expect(await store.schedules.get('job')).toBeDefined();
    expect(await store.schedules.advance('job', 160, undefined)).toBe(true);
    expect(await store.schedules.get('job')).toBeUndefined();
    expect(await store.schedules.advance('job', 160, undefined)).toBe(false);
    expect(await store.schedules.nextAt()).toBeUndefined();
    expect(await store.schedules.ofDestination(chat('c:1'))).toEqual([]);
    expect(await store.schedules.all()).toEqual([]);
    expect(await store.schedules.add(schedule('other', 1), { maxPerDestination: 1, maxTotal: 1 })).toEqual({ status: 'added' });
  });

  it('lets one of two writers advance a due run, however many times they race', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    for (let run = 0; run < 20; run++) {
      await store.schedules.add({ ...schedule(`job-${run}`, 100), cron: '* * * * *' }, ROOMY);
    }
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, run) => [store.schedules.advance(`job-${run}`, 100, 160 + run), second.schedules.advance(`job-${run}`, 100, 200 + run)]).flat(),
    );
    for (let run = 0; run < 20; run++) {
      const pair = outcomes.slice(run * 2, run * 2 + 2);
      expect(pair.filter(Boolean)).toHaveLength(1);
      expect((await second.schedules.get(`job-${run}`))?.nextAt).toBe(pair[0] ? 160 + run : 200 + run);
    }
    // Removing its last run races the same way: one writer removes it.
    await store.schedules.add(schedule('once', 50), ROOMY);
    const removed = await Promise.all([store.schedules.advance('once', 50, undefined), second.schedules.advance('once', 50, undefined)]);
    expect(removed.filter(Boolean)).toHaveLength(1);
    expect(await store.schedules.get('once')).toBeUndefined();
  });

  it('says whether a removed record existed, and counts it toward no cap after', async () => {
    const { store } = await open();
    await store.schedules.add(schedule('r1', 100), ROOMY);
    expect(await store.schedules.remove('r1')).toBe(true);
    expect(await store.schedules.remove('r1')).toBe(false);
    expect(await store.schedules.due(1_000, 10)).toEqual([]);
    expect(await store.schedules.add(schedule('r2', 100), { maxPerDestination: 1, maxTotal: 1 })).toEqual({ status: 'added' });
  });

  it('refuses past its caps without adding', async () => {
    const { store } = await open();
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.schedules.add(schedule('a1', 1, 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.schedules.add(schedule('a2', 1, 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.schedules.add(schedule('a3', 1, 'a'), caps)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(await store.schedules.add(schedule('b1', 1, 'b'), caps)).toEqual({ status: 'added' });
    expect(await store.schedules.add(schedule('b2', 1, 'b'), caps)).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(ids(await store.schedules.all())).toEqual(['a1', 'a2', 'b1']);
  });

  it('checks many adds asked at once in the order asked, adding exactly the cap', async () => {
    const { store } = await open();
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.schedules.add(schedule('a1', 1, 'a'), caps)).toEqual({ status: 'added' });
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => store.schedules.add(schedule(`s${i}`, 1, i < 5 ? 'a' : 'b'), caps)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['added', 'full', 'full', 'full', 'full', 'added', 'full', 'full', 'full', 'full']);
    expect(outcomes[1]).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(outcomes[6]).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(ids(await store.schedules.due(1, 100))).toEqual(['a1', 's0', 's5']);
  });

  it('adds exactly the cap when two writers race for the last slots', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    // Slots once taken and freed again count for nothing.
    for (const [id, chatId] of [['a1', 'a'], ['a2', 'a'], ['b1', 'b']] as const) expect(await store.schedules.add(schedule(id, 1, chatId), caps)).toEqual({ status: 'added' });
    for (const id of ['a1', 'a2', 'b1']) expect(await second.schedules.remove(id)).toBe(true);
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : second).schedules.add(schedule(`s${i}`, 1, i % 4 < 2 ? 'a' : 'b'), caps)));
    expect(outcomes.filter((outcome) => outcome.status === 'added')).toHaveLength(3);
    const due = await store.schedules.due(1, 100);
    expect(due).toHaveLength(3);
    expect(due.filter((record) => record.destination.chatId === 'a').length).toBeLessThanOrEqual(2);
    expect(due.filter((record) => record.destination.chatId === 'b').length).toBeLessThanOrEqual(2);
  });

  it('keeps every record through a close and a reopen', async () => {
    const subject = await open();
    const records = [schedule('r1', 100), { ...schedule('c1', 50), cron: '*/5 * * * *' }];
    for (const record of records) await subject.store.schedules.add(record, ROOMY);
    const again = await subject.reopen();
    expect(await again.schedules.due(100, 10)).toEqual([records[1], records[0]]);
  });

  it('reads what is overdue latest first, of a chat by destination, target, home channel or origin', async () => {
    const { store } = await open();
    await store.homes.set(chat('home-chat'));
    await store.schedules.add(schedule('mine', 10, 'a'), ROOMY);
    await store.schedules.add({ ...schedule('targeted', 20, 'x'), target: 'webhook:a:t' }, ROOMY);
    await store.schedules.add({ ...schedule('to-home', 30, 'x'), target: 'home' }, ROOMY);
    await store.schedules.add({ ...schedule('to-named-home', 40, 'x'), target: 'home:webhook' }, ROOMY);
    await store.schedules.add({ ...schedule('tie', 40, 'x'), target: 'origin' }, ROOMY);
    await store.schedules.add(schedule('future', 500, 'a'), ROOMY);
    const overdue = async (query: { chatId?: string; threadId?: string; limit?: number; before?: number }) =>
      ids(await store.schedules.overdue({ before: 100, limit: 10, ...query }));
    expect(await overdue({})).toEqual(['to-named-home', 'tie', 'to-home', 'targeted', 'mine']);
    expect(await overdue({ limit: 2 })).toEqual(['to-named-home', 'tie']);
    expect(await overdue({ limit: 0 })).toEqual([]);
    expect(await overdue({ limit: -1 })).toEqual([]);
    expect(await overdue({ before: 20 })).toEqual(['mine']);
    expect(await overdue({ before: 11, limit: 5 })).toEqual(['mine']);
    expect(await overdue({ chatId: 'a' })).toEqual(['targeted', 'mine']);
    expect(await overdue({ chatId: 'a', threadId: 't' })).toEqual(['targeted']);
    expect(await overdue({ chatId: 'home-chat' })).toEqual(['to-named-home', 'to-home']);
    expect(await overdue({ chatId: 'x' })).toEqual(['to-named-home', 'tie', 'to-home', 'targeted']);
    const [first] = await store.schedules.overdue({ before: 100, limit: 1 });
    expect(first).toEqual({ ...schedule('to-named-home', 40, 'x'), target: 'home:webhook' });
  });

  it('reports a damaged record with what can be read of it, and the gateway\'s own reads refuse it', async () => {
    const subject = await open();
    const { store } = subject;
    await store.schedules.add(schedule('s1', 10, 'a'), ROOMY);
    await subject.damage('schedules', 's1', 'null');
    expect(await store.schedules.overdue({ before: 100, limit: 10 })).toEqual([
      { id: 's1', origin: undefined, destination: undefined, target: 'origin', text: 'run of s1', nextAt: 10, createdAt: 1 },
    ]);
    expect(await store.schedules.overdue({ before: 100, limit: 10, chatId: 'a' })).toEqual([]);
    await expect(store.schedules.get('s1')).rejects.toThrow();
    await expect(store.schedules.due(100, 10)).rejects.toThrow();
  });
});
