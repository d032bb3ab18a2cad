import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { ProcessRecord } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat, routingOf } from './store.fixture.js';

const tempDir = useTempDir('process-table');
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

describe('SqliteStore processes', () => {
  it('round-trips a record through its life: added, progressed, ended, removed', async () => {
    const store = await SqliteStore.open(':memory:');
    const record = { ...processRecord('p1'), checkIntervalMs: 30_000 };
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
    await store.close();
  });

  it('lists all oldest first, and one chat and thread exactly', async () => {
    const store = await SqliteStore.open(':memory:');
    // Ids out of alphabetical order: the order is the order they were added in.
    for (const record of [processRecord('pb', 'a'), processRecord('pa', 'a', 't'), processRecord('pc', 'b'), processRecord('pd', 'a')]) {
      await store.processes.add(record, ROOMY);
    }
    expect((await store.processes.all()).map((record) => record.id)).toEqual(['pb', 'pa', 'pc', 'pd']);
    expect((await store.processes.ofDestination(chat('a'))).map((record) => record.id)).toEqual(['pb', 'pd']);
    expect((await store.processes.ofDestination(chat('a', 't'))).map((record) => record.id)).toEqual(['pa']);
    expect(await store.processes.ofDestination(chat('zzz'))).toEqual([]);
    await store.close();
  });

  it('refuses past the per-chat and the total cap without adding, and counts a removed one no more', async () => {
    const store = await SqliteStore.open(':memory:');
    const caps = { maxPerDestination: 2, maxTotal: 3 };
    expect(await store.processes.add(processRecord('a1', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a2', 'a'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('a3', 'a'), caps)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    // A thread is a destination of its own.
    expect(await store.processes.add(processRecord('at', 'a', 't'), caps)).toEqual({ status: 'added' });
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'full', scope: 'total', open: 3 });
    expect((await store.processes.all()).map((record) => record.id)).toEqual(['a1', 'a2', 'at']);
    await store.processes.remove('a1');
    expect(await store.processes.add(processRecord('b1', 'b'), caps)).toEqual({ status: 'added' });
    await store.close();
  });

  it('adds exactly up to the cap when many adds of one event-loop turn race for the last slots', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.processes.add(processRecord('first', 'a'), { maxPerDestination: 5, maxTotal: 5 });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.processes.add(processRecord(`p${i}`, i % 2 === 0 ? 'a' : 'b'), { maxPerDestination: 3, maxTotal: 5 })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'added')).toHaveLength(4);
    expect((await store.processes.all()).map((record) => record.id)).toEqual(['first', 'p0', 'p1', 'p2', 'p3']);
    expect(outcomes[4]).toEqual({ status: 'full', scope: 'destination', open: 3 });
    expect(outcomes[5]).toEqual({ status: 'full', scope: 'total', open: 5 });
    await store.close();
  });

  it('says an id is taken, and only for that add of its commit', async () => {
    const store = await SqliteStore.open(':memory:');
    await store.processes.add(processRecord('p1'), ROOMY);
    const results = await Promise.all([
      store.processes.add(processRecord('p2'), ROOMY),
      store.processes.add({ ...processRecord('p1'), command: 'other' }, ROOMY),
      store.processes.add(processRecord('p3'), ROOMY),
    ]);
    expect(results.map((result) => result.status)).toEqual(['added', 'taken', 'added']);
    expect((await store.processes.get('p1'))?.command).toBe(processRecord('p1').command);
    expect((await store.processes.all()).map((record) => record.id)).toEqual(['p1', 'p2', 'p3']);
    await store.close();
  });

  it('keeps every record, ended or not, through a close and a reopen', async () => {
    const path = join(tempDir(), 'processes.db');
    const first = await SqliteStore.open(path);
    const running = processRecord('running');
    const ended = { ...processRecord('ended'), notifyOnComplete: false, progressSent: 2 };
    await first.processes.add(running, ROOMY);
    await first.processes.add(ended, ROOMY);
    await first.processes.ended('ended', { code: 3, endedAt: 2_000 });
    await first.close();
    const again = await SqliteStore.open(path);
    expect(await again.processes.all()).toEqual([running, { ...ended, exit: { code: 3, endedAt: 2_000 } }]);
    await again.close();
  });
});
