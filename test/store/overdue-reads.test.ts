import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { findLostInStore } from '../../src/forensics/lost-in-store.js';
import { openDatabase, sqliteOperations } from '../../src/store/sqlite-operations.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat, routingOf } from './store.fixture.js';

const tempDir = useTempDir('overdue-reads');
const LEASE = 1_000_000;

/** The plan of every statement of the forensics reads (they alone take @filtered), parameters bound to 1. */
function overduePlans(): { sql: string; plan: string[] }[] {
  const db = openDatabase(':memory:');
  const prepared: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => (prepared.push(sql), prepare(sql))) as typeof db.prepare;
  sqliteOperations(db, { doneMs: 1, failedMs: 1 });
  db.prepare = prepare;
  const parameters = { before: 1, limit: 1, filtered: 1, chat_id: 'a', thread_id: 'b', chat: 'a', thread: 'b' };
  const plans = prepared
    .filter((sql) => sql.includes('@filtered'))
    .map((sql) => ({ sql, plan: db.prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`).all(parameters).map((row) => row.detail) }));
  db.close();
  return plans;
}

describe('the store\'s forensics reads', () => {
  it('read each table through an index and never walk one', () => {
    const plans = overduePlans();
    expect(plans).toHaveLength(3);
    const details = plans.flatMap(({ plan }) => plan);
    // Only indexes are scanned: the heads (few: one per destination with open deliveries) and the failed ones (pruned by age).
    expect(details.filter((detail) => /^SCAN (deliveries|processes|schedules|homes)\b/.test(detail) && !/USING (COVERING )?INDEX/.test(detail))).toEqual([]);
    const all = details.join('\n');
    for (const index of ['deliveries_pending_since', 'deliveries_heads', 'deliveries_failed_since', 'schedules_next', 'processes_ended']) {
      expect(all).toContain(index);
    }
    // Dead letters and pending deliveries are each read in the order of their index and stop at
    // the LIMIT: a sort of ties at most, never a sort of every kept row.
    expect(details).toContain('SEARCH deliveries USING INDEX deliveries_failed_since (attempts_since<?)');
    expect(details).toContain('SEARCH deliveries USING INDEX deliveries_pending_since (attempts_since<?)');
    expect(all).not.toMatch(/USING INDEX deliveries_failed\b(?!_)/);
    for (const { sql } of plans) expect(sql).toMatch(/LIMIT @limit\s*$/);
  });

  it('outbox.overdue reads state and routing, not text or attachment, and at most `limit`, newest first', async () => {
    const store = await SqliteStore.open(':memory:');
    const attachment = { filename: 'a.ogg', contentType: 'audio/ogg', dataBase64: 'AAAA' };
    for (let i = 0; i < 4; i++) {
      await store.outbox.add(
        { id: `d${i}`, kind: 'send', destination: chat(`c${i}`), text: 'x'.repeat(1000), origin: routingOf(`c${i}`), createdAt: 10 + i, attachment },
        LEASE,
      );
    }
    await store.outbox.markFailed('d1', 'gone', LEASE);
    const overdue = await store.outbox.overdue({ before: 100, limit: 3 });
    expect(overdue.map((delivery) => [delivery.id, delivery.status])).toEqual([
      ['d3', 'sending'],
      ['d2', 'sending'],
      ['d1', 'failed'],
    ]);
    expect(overdue[0]).toEqual({
      id: 'd3',
      kind: 'send',
      status: 'sending',
      destination: 'webhook:c3',
      origin: routingOf('c3'),
      attempts: 0,
      attemptsSince: 13,
      dueAt: 13,
      leaseUntil: LEASE,
    });
    expect(await store.outbox.overdue({ before: 100, limit: -1 })).toEqual([]);
    await store.close();
  });

  it('report a row that does not parse with what can be read of it, instead of failing', async () => {
    const path = join(tempDir(), 'damaged.db');
    await (await SqliteStore.open(path)).close();
    const raw = new Database(path);
    raw
      .prepare(
        `INSERT INTO deliveries (id, kind, destination, text, origin, status, head, attempts, attempts_since, due_at, last_error, created_at, finished_at)
         VALUES ('d-damaged', 'reply', 'no-colon', '', '{not json', 'failed', 0, 3, 5, 5, 'unreadable in the store: bad target', 5, 6)`,
      )
      .run();
    raw.close();
    const store = await SqliteStore.open(path);
    try {
      expect(await findLostInStore(store, { now: 1_000, lostAfterMs: 10, limit: 10 })).toEqual([
        { type: 'lost', what: 'delivery', id: 'd-damaged', kind: 'reply', state: 'failed', dueAt: 5, lastError: 'unreadable in the store: bad target', attempts: 3, source: 'store' },
      ]);
      // Its origin cannot match a chat, nor its destination: filtered out, not an error.
      expect(await findLostInStore(store, { now: 1_000, lostAfterMs: 10, limit: 10, chatId: 'no-colon' })).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
