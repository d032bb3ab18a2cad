import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { ScheduleRecord } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat, routingOf } from './store.fixture.js';

const tempDir = useTempDir('schedule-table');
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

const ids = (records: readonly ScheduleRecord[]) => records.map((record) => record.id);

describe('SqliteStore schedules', () => {
  it('round-trips reminders and cron jobs', async () => {
    const store = await SqliteStore.open(':memory:');
    const reminder = schedule('r1', 500);
    const job = { ...schedule('c1', 600, 'c:1', 't/1'), target: 'home:telegram', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' };
    await store.schedules.add(reminder, ROOMY);
    await store.schedules.add(job, ROOMY);
    expect(await store.schedules.get('r1')).toEqual(reminder);
    expect(await store.schedules.get('c1')).toEqual(job);
    expect(await store.schedules.get('nope')).toBeUndefined();
    await store.close();
  });

  it('says an id is taken instead of failing or overwriting the job that has it', async () => {
    const store = await SqliteStore.open(':memory:');
    const first = schedule('same', 500);
    expect(await store.schedules.add(first, ROOMY)).toEqual({ status: 'added' });
    expect(await store.schedules.add({ ...schedule('same', 900), text: 'another' }, ROOMY)).toEqual({ status: 'taken' });
    expect(await store.schedules.get('same')).toEqual(first);
    await store.close();
  });

  it('answers what is due earliest first up to a limit, when the next is due, and each chat by due time', async () => {
    const store = await SqliteStore.open(':memory:');
    expect(await store.schedules.nextAt()).toBeUndefined();
    expect(await store.schedules.due(1_000, 10)).toEqual([]);
    for (const record of [schedule('late', 300, 'a'), schedule('early', 100, 'b'), schedule('mid', 200, 'a'), schedule('future', 900, 'a', 't')]) {
      await store.schedules.add(record, ROOMY);
    }
    expect(await store.schedules.nextAt()).toBe(100);
    expect(ids(await store.schedules.due(300, 10))).toEqual(['early', 'mid', 'late']);
    expect(ids(await store.schedules.due(300, 2))).toEqual(['early', 'mid']);
    expect(ids(await store.schedules.due(99, 10))).toEqual([]);
    expect(ids(await store.schedules.due(300, -1))).toEqual([]);
    expect(ids(await store.schedules.ofDestination(chat('a')))).toEqual(['mid', 'late']);
    expect(ids(await store.schedules.ofDestination(chat('a', 't')))).toEqual(['future']);
    expect(ids(await store.schedules.all())).toEqual(['early', 'mid', 'late', 'future']);
    await store.close();
  });

  it('advances a run only while it is still due at the time it ran: two runners cannot both', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.schedules.add({ ...schedule('job', 100), cron: '* * * * *' }, ROOMY);
    // Two runners of the same run, in one commit: the first moves it, the second finds it moved.
    const [first, second] = await Promise.all([store.schedules.advance('job', 100, 160), store.schedules.advance('job', 100, 160)]);
    expect([first, second]).toEqual([true, false]);
    expect((await store.schedules.get('job'))?.nextAt).toBe(160);
    expect(await store.schedules.advance('job', 100, 999)).toBe(false);
    expect((await store.schedules.get('job'))?.nextAt).toBe(160);
    expect(await store.schedules.nextAt()).toBe(160);
    // No next run: its last run removes it, once.
    expect(await store.schedules.advance('job', 150, undefined)).toBe(false);
    expect(await store.schedules.get('job')).toBeDefined();
    expect(await store.schedules.advance('job', 160, undefined)).toBe(true);
    expect(await store.schedules.get('job')).toBeUndefined();
    expect(await store.schedules.advance('job', 160, undefined)).toBe(false);
    expect(await store.schedules.nextAt()).toBeUndefined();
    await store.close();
  });

  it('says whether a removed record existed', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.schedules.add(schedule('r1', 100), ROOMY);
    expect(await store.schedules.remove('r1')).toBe(true);
    expect(await store.schedules.remove('r1')).toBe(false);
    expect(await store.schedules.due(1_000, 10)).toEqual([]);
    await store.close();
  });

  it('refuses past its caps without adding; many adds of one turn racing for the last slots add exactly the cap', async () => {
    const store = await SqliteStore.open(':memory:');
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.schedules.add(schedule('a1', 1, 'a'), caps)).toEqual({ status: 'added' });
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => store.schedules.add(schedule(`s${i}`, 1, i < 5 ? 'a' : 'b'), caps)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['added', 'full', 'full', 'full', 'full', 'added', 'full', 'full', 'full', 'full']);
    expect(outcomes[1]).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(outcomes[6]).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect(ids(await store.schedules.due(1, 100))).toEqual(['a1', 's0', 's5']);
    await store.close();
  });

  it('keeps every record through a close and a reopen', async () => {
    const path = join(tempDir(), 'schedules.db');
    const first = await SqliteStore.open(path);
    const records = [schedule('r1', 100), { ...schedule('c1', 50), cron: '*/5 * * * *' }];
    for (const record of records) await first.schedules.add(record, ROOMY);
    await first.close();
    const again = await SqliteStore.open(path);
    expect(await again.schedules.due(100, 10)).toEqual([records[1], records[0]]);
    await again.close();
  });
});
