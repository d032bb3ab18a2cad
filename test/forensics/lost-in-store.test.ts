import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryKind, Destination } from '../../src/session/delivery.js';
import type { LostWork } from '../../src/forensics/findings.js';
import { findLostInStore } from '../../src/forensics/lost-in-store.js';
import type { RoutingSnapshot } from '../../src/session/index.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('lost-in-store');
const ROOMY = { maxPerDestination: 100, maxTotal: 100 };
const NOW = 50_000_000;
const LOST_AFTER = 60_000;
/** Due before this is lost; at it or after, not yet. */
const CUTOFF = NOW - LOST_AFTER;
const LEASE = NOW + 60_000;

const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

let stores = 0;
async function openStore(): Promise<SqliteStore> {
  const store = await SqliteStore.open(join(tempDir(), `store-${++stores}.db`));
  opened.push(store);
  return store;
}

function chat(chatId: string, threadId?: string, platform = 'webhook'): Destination {
  return { platform, chatId, ...(threadId === undefined ? {} : { threadId }) };
}

/** A routing snapshot of `where`, captured by a span of trace `traceId`. */
function routing(where: Destination, traceId = 'a'.repeat(32)): RoutingSnapshot {
  return {
    v: 1,
    session: { ...where, chatType: 'group', sessionId: `tl_${where.chatId}` },
    origin: { traceId, spanId: 'b'.repeat(16), traceFlags: 1 },
  };
}

interface DeliverySpec {
  readonly kind?: DeliveryKind;
  readonly to: Destination;
  /** Where the work came from: the destination when not given. */
  readonly from?: Destination;
  readonly traceId?: string;
  /** When it was recorded, so first due. */
  readonly at: number;
}

function addDelivery(store: SqliteStore, id: string, spec: DeliverySpec, leaseUntil = LEASE) {
  return store.outbox.add(
    {
      id,
      kind: spec.kind ?? 'reply',
      destination: spec.to,
      text: `text of ${id}`,
      origin: routing(spec.from ?? spec.to, spec.traceId),
      createdAt: spec.at,
    },
    leaseUntil,
  );
}

/** A background command that started at `at`, ended at `endedAt` (unless undefined) and asked for a notice when `notify`. */
async function addProcess(store: SqliteStore, id: string, where: Destination, endedAt: number | undefined, notify = true, traceId?: string) {
  await store.processes.add(
    { id, origin: routing(where, traceId), destination: where, command: `make ${id}`, pid: 4242, startedAt: 1_000, notifyOnComplete: notify, progressSent: 0 },
    ROOMY,
  );
  if (endedAt !== undefined) await store.processes.ended(id, { code: 1, endedAt });
}

async function addSchedule(store: SqliteStore, id: string, where: Destination, nextAt: number, target = 'origin', traceId?: string) {
  await store.schedules.add(
    { id, origin: routing(where, traceId), destination: where, target, text: `run ${id}`, nextAt, createdAt: 1_000, ...(target === 'origin' ? {} : { cron: '0 9 * * *' }) },
    ROOMY,
  );
}

const find = (store: SqliteStore, more: { chatId?: string; threadId?: string; limit?: number } = {}) =>
  findLostInStore(store, { now: NOW, lostAfterMs: LOST_AFTER, limit: 100, ...more });

const ids = (found: readonly LostWork[]) => found.map((work) => work.id);

describe('findLostInStore: work the store shows due and not delivered', () => {
  it('finds a dead letter with its destination, origin, origin trace, attempts and last error', async () => {
    const store = await openStore();
    const origin = chat('origin-chat', 't1', 'telegram');
    await addDelivery(store, 'd-dead', { to: chat('dest-chat'), from: origin, traceId: 'c'.repeat(32), at: CUTOFF - 5_000 });
    await store.outbox.markFailed('d-dead', 'receiver answered 403: forbidden', LEASE);
    expect(await find(store)).toEqual([
      {
        type: 'lost',
        what: 'delivery',
        id: 'd-dead',
        kind: 'reply',
        state: 'failed',
        dueAt: CUTOFF - 5_000,
        destination: { platform: 'webhook', chatId: 'dest-chat' },
        origin: { platform: 'telegram', chatId: 'origin-chat', threadId: 't1' },
        originTraceId: 'c'.repeat(32),
        lastError: 'receiver answered 403: forbidden',
        attempts: 1,
        source: 'store',
      },
    ]);
  });

  it('finds deliveries still pending (retrying, or queued behind) and being sent, each due when its attempts began', async () => {
    const store = await openStore();
    // A head retrying for a long time: its next attempt is in the future, yet it is late.
    await addDelivery(store, 'd-retrying', { kind: 'notification', to: chat('p'), at: CUTOFF - 3_000 });
    await store.outbox.retryAt('d-retrying', NOW + 10_000, 'connect ECONNREFUSED 127.0.0.1:9', LEASE);
    await addDelivery(store, 'd-behind', { kind: 'cron', to: chat('p'), at: CUTOFF - 2_000 });
    // Being sent under a lease that ended long ago: the sender died.
    await addDelivery(store, 'd-stuck', { to: chat('s'), at: CUTOFF - 1_000 }, CUTOFF - 500);
    const found = await find(store);
    expect(found.map((work) => [work.id, work.what, work.kind, work.state, work.dueAt, work.attempts, work.lastError])).toEqual([
      ['d-stuck', 'delivery', 'reply', 'sending', CUTOFF - 1_000, 0, undefined],
      ['d-behind', 'cron run', 'cron', 'pending', CUTOFF - 2_000, 0, undefined],
      ['d-retrying', 'watcher notification', 'notification', 'pending', CUTOFF - 3_000, 1, 'connect ECONNREFUSED 127.0.0.1:9'],
    ]);
  });

  it('leaves out done deliveries, however old', async () => {
    const store = await openStore();
    await addDelivery(store, 'd-done', { to: chat('d'), at: CUTOFF - 10_000 });
    await store.outbox.markDone('d-done', LEASE);
    expect(await find(store)).toEqual([]);
  });

  it('counts as lost only what was due more than lostAfterMs ago: just inside is not, just outside is', async () => {
    const store = await openStore();
    await addDelivery(store, 'd-outside', { to: chat('a'), at: CUTOFF - 1 });
    await addDelivery(store, 'd-at', { to: chat('b'), at: CUTOFF });
    await addDelivery(store, 'd-inside', { to: chat('c'), at: CUTOFF + 1 });
    await addSchedule(store, 's-outside', chat('a'), CUTOFF - 1);
    await addSchedule(store, 's-at', chat('b'), CUTOFF);
    await addProcess(store, 'p-outside', chat('a'), CUTOFF - 1);
    await addProcess(store, 'p-at', chat('b'), CUTOFF);
    expect(ids(await find(store)).sort()).toEqual([`cron:s-outside:${CUTOFF - 1}`, 'd-outside', 'proc:p-outside:done']);
  });

  it('finds a cron run that did not happen, with where it would have gone and its origin', async () => {
    const store = await openStore();
    const origin = chat('o', 'topic');
    await store.homes.set(chat('home-chat', undefined, 'telegram'));
    await addSchedule(store, 'sch-origin', origin, CUTOFF - 1_000, 'origin', 'd'.repeat(32));
    await addSchedule(store, 'sch-home', chat('o', undefined, 'telegram'), CUTOFF - 2_000, 'home');
    await addSchedule(store, 'sch-explicit', origin, CUTOFF - 3_000, 'slack:C%3A1:t9');
    await addSchedule(store, 'sch-unset-home', origin, CUTOFF - 4_000, 'home:discord');
    await addSchedule(store, 'sch-future', origin, NOW + 60_000);
    const found = await find(store);
    // Each is named by the delivery id the scheduler gives the run it owes, as the traces name it.
    expect(found.map((work) => [work.id, work.workId, work.what, work.kind, work.state, work.dueAt, work.destination])).toEqual([
      [`cron:sch-origin:${CUTOFF - 1_000}`, 'sch-origin', 'cron run', 'cron', 'overdue', CUTOFF - 1_000, { platform: 'webhook', chatId: 'o', threadId: 'topic' }],
      [`cron:sch-home:${CUTOFF - 2_000}`, 'sch-home', 'cron run', 'cron', 'overdue', CUTOFF - 2_000, { platform: 'telegram', chatId: 'home-chat' }],
      [`cron:sch-explicit:${CUTOFF - 3_000}`, 'sch-explicit', 'cron run', 'cron', 'overdue', CUTOFF - 3_000, { platform: 'slack', chatId: 'C:1', threadId: 't9' }],
      [`cron:sch-unset-home:${CUTOFF - 4_000}`, 'sch-unset-home', 'cron run', 'cron', 'overdue', CUTOFF - 4_000, undefined],
    ]);
    expect(found[0]).toMatchObject({ origin: { platform: 'webhook', chatId: 'o', threadId: 'topic' }, originTraceId: 'd'.repeat(32), source: 'store' });
  });

  it('finds an ended command whose completion notice is not recorded, or recorded and not done, once, with the notice\'s state', async () => {
    const store = await openStore();
    const where = chat('w', 'th');
    await addProcess(store, 'p-unrecorded', where, CUTOFF - 1_000, true, 'e'.repeat(32));
    await addProcess(store, 'p-failed', where, CUTOFF - 2_000);
    await addDelivery(store, 'proc:p-failed:done', { kind: 'notification', to: where, at: CUTOFF - 1_500 });
    await store.outbox.markFailed('proc:p-failed:done', 'receiver answered 410: gone', LEASE);
    const found = await find(store);
    expect(found).toEqual([
      {
        type: 'lost',
        what: 'watcher notification',
        id: 'proc:p-unrecorded:done',
        workId: 'p-unrecorded',
        kind: 'notification',
        state: 'not recorded',
        dueAt: CUTOFF - 1_000,
        destination: { platform: 'webhook', chatId: 'w', threadId: 'th' },
        origin: { platform: 'webhook', chatId: 'w', threadId: 'th' },
        originTraceId: 'e'.repeat(32),
        source: 'store',
      },
      expect.objectContaining({ id: 'proc:p-failed:done', workId: 'p-failed', what: 'watcher notification', state: 'failed', lastError: 'receiver answered 410: gone', attempts: 1 }),
    ]);
  });

  it('leaves out running commands, commands that asked for no notice, and notices done', async () => {
    const store = await openStore();
    await addProcess(store, 'p-running', chat('r'), undefined);
    await addProcess(store, 'p-silent', chat('r'), CUTOFF - 1_000, false);
    await addProcess(store, 'p-told', chat('r'), CUTOFF - 1_000);
    await addDelivery(store, 'proc:p-told:done', { kind: 'notification', to: chat('r'), at: CUTOFF - 500 });
    await store.outbox.markDone('proc:p-told:done', LEASE);
    expect(await find(store)).toEqual([]);
  });

  it('reports a failed notice on its own once its command is forgotten', async () => {
    const store = await openStore();
    await addDelivery(store, 'proc:gone:done', { kind: 'notification', to: chat('g'), at: CUTOFF - 500 });
    await store.outbox.markFailed('proc:gone:done', 'refused', LEASE);
    expect(await find(store)).toEqual([expect.objectContaining({ id: 'proc:gone:done', what: 'watcher notification', state: 'failed' })]);
  });

  it('filters by chat (and thread) on the destination or on the origin, ids matched whole', async () => {
    const store = await openStore();
    // Misrouted: from x, to y.
    await addDelivery(store, 'd-x-to-y', { to: chat('y'), from: chat('x'), at: CUTOFF - 1_000 });
    await addDelivery(store, 'd-xy', { to: chat('xy'), at: CUTOFF - 2_000 });
    await addDelivery(store, 'd-x-thread', { to: chat('x', 'th'), at: CUTOFF - 3_000 });
    await addDelivery(store, 'd-colon', { to: chat('x:th'), at: CUTOFF - 3_500 });
    await addDelivery(store, 'd-q-to-x-thread', { to: chat('x', 'th2'), from: chat('q'), at: CUTOFF - 3_700 });
    await addSchedule(store, 's-from-z-to-x', chat('z'), CUTOFF - 4_000, 'webhook:x');
    await addProcess(store, 'p-x-thread', chat('x', 'th'), CUTOFF - 5_000);
    await addProcess(store, 'p-z', chat('z'), CUTOFF - 6_000);
    expect(ids(await find(store, { chatId: 'x' }))).toEqual(['d-x-to-y', 'd-x-thread', 'd-q-to-x-thread', `cron:s-from-z-to-x:${CUTOFF - 4_000}`, 'proc:p-x-thread:done']);
    expect(ids(await find(store, { chatId: 'x', threadId: 'th2' }))).toEqual(['d-q-to-x-thread']);
    expect(ids(await find(store, { chatId: 'y' }))).toEqual(['d-x-to-y']);
    expect(ids(await find(store, { chatId: 'x', threadId: 'th' }))).toEqual(['d-x-thread', 'proc:p-x-thread:done']);
    expect(ids(await find(store, { threadId: 'th' }))).toEqual(['d-x-thread', 'proc:p-x-thread:done']);
    expect(ids(await find(store, { chatId: 'x:th' }))).toEqual(['d-colon']);
    expect(ids(await find(store, { chatId: 'z' }))).toEqual([`cron:s-from-z-to-x:${CUTOFF - 4_000}`, 'proc:p-z:done']);
    expect(ids(await find(store, { chatId: 'nobody' }))).toEqual([]);
  });

  it('filters a run to a home channel by the home channel\'s chat too', async () => {
    const store = await openStore();
    await store.homes.set(chat('home-chat', undefined, 'telegram'));
    await addSchedule(store, 's-home', chat('o', undefined, 'telegram'), CUTOFF - 1_000, 'home');
    await addSchedule(store, 's-home-of', chat('o2'), CUTOFF - 2_000, 'home:telegram');
    expect(ids(await find(store, { chatId: 'home-chat' }))).toEqual([`cron:s-home:${CUTOFF - 1_000}`, `cron:s-home-of:${CUTOFF - 2_000}`]);
    expect(ids(await find(store, { chatId: 'o2' }))).toEqual([`cron:s-home-of:${CUTOFF - 2_000}`]);
  });

  it('answers newest first across the outbox, processes and schedules, at most `limit`', async () => {
    const store = await openStore();
    for (let i = 0; i < 3; i++) {
      await addDelivery(store, `d${i}`, { to: chat(`d${i}`), at: CUTOFF - 10 - i * 3 });
      await addProcess(store, `p${i}`, chat(`p${i}`), CUTOFF - 11 - i * 3);
      await addSchedule(store, `s${i}`, chat(`s${i}`), CUTOFF - 12 - i * 3);
    }
    const work = (found: readonly LostWork[]) => found.map((lost) => lost.workId ?? lost.id);
    expect(work(await find(store))).toEqual(['d0', 'p0', 's0', 'd1', 'p1', 's1', 'd2', 'p2', 's2']);
    expect(work(await find(store, { limit: 4 }))).toEqual(['d0', 'p0', 's0', 'd1']);
    expect(ids(await find(store, { limit: 0 }))).toEqual([]);
    expect(ids(await find(store, { limit: -5 }))).toEqual([]);
  });

  it('reports damaged schedule and process rows with what can be read of them, and the gateway\'s own reads still refuse them', async () => {
    const path = join(tempDir(), 'damaged-tools.db');
    await (await SqliteStore.open(path)).close();
    const raw = new Database(path);
    const schedule = raw.prepare(
      `INSERT INTO schedules (id, origin, destination, target, text, next_at, created_at) VALUES (?, '{not json', 'no-colon', ?, 't', ?, 1)`,
    );
    // A bare `home` takes its platform from the origin, which here cannot be read.
    schedule.run('s-home', 'home', CUTOFF - 1_000);
    schedule.run('s-origin', 'origin', CUTOFF - 2_000);
    schedule.run('s-null-origin', 'webhook:x', CUTOFF - 3_000);
    raw.prepare(`UPDATE schedules SET origin = 'null' WHERE id = 's-null-origin'`).run();
    raw
      .prepare(
        `INSERT INTO processes (id, origin, destination, command, pid, started_at, notify_on_complete, progress_sent, ended_at, exit_code)
         VALUES ('p-damaged', '[1', 'no-colon', 'make', 1, 1, 1, 0, ?, 1)`,
      )
      .run(CUTOFF - 4_000);
    raw.close();
    const store = await SqliteStore.openReadOnly(path);
    opened.push(store);
    expect(await find(store)).toEqual([
      { type: 'lost', what: 'cron run', id: `cron:s-home:${CUTOFF - 1_000}`, workId: 's-home', kind: 'cron', state: 'overdue', dueAt: CUTOFF - 1_000, source: 'store' },
      { type: 'lost', what: 'cron run', id: `cron:s-origin:${CUTOFF - 2_000}`, workId: 's-origin', kind: 'cron', state: 'overdue', dueAt: CUTOFF - 2_000, source: 'store' },
      {
        type: 'lost',
        what: 'cron run',
        id: `cron:s-null-origin:${CUTOFF - 3_000}`,
        workId: 's-null-origin',
        kind: 'cron',
        state: 'overdue',
        dueAt: CUTOFF - 3_000,
        destination: { platform: 'webhook', chatId: 'x' },
        source: 'store',
      },
      {
        type: 'lost',
        what: 'watcher notification',
        id: 'proc:p-damaged:done',
        workId: 'p-damaged',
        kind: 'notification',
        state: 'not recorded',
        dueAt: CUTOFF - 4_000,
        source: 'store',
      },
    ]);
    // Filtered by chat too: a damaged origin matches no chat, an explicit target still does.
    expect(ids(await find(store, { chatId: 'x' }))).toEqual([`cron:s-null-origin:${CUTOFF - 3_000}`]);
    const own = await SqliteStore.open(path);
    opened.push(own);
    await expect(own.schedules.get('s-origin')).rejects.toThrow(SyntaxError);
    await expect(own.processes.all()).rejects.toThrow(SyntaxError);
  });

  it('changes nothing in the store', async () => {
    const store = await openStore();
    await addDelivery(store, 'd-stuck', { to: chat('s'), at: CUTOFF - 1_000 }, CUTOFF - 500);
    await addProcess(store, 'p-ended', chat('p'), CUTOFF - 1_000);
    await addSchedule(store, 's-due', chat('s'), CUTOFF - 1_000);
    const snapshot = async () => ({
      outbox: await store.outbox.list({ limit: 100 }),
      processes: await store.processes.all(),
      schedules: await store.schedules.due(NOW, 100),
    });
    const before = await snapshot();
    expect(await find(store)).toHaveLength(3);
    expect(await snapshot()).toEqual(before);
  });
});
