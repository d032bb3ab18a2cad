/**
 * A claim pass over a large outbox: 200,000 pending deliveries over 10,000 chats, every chat's
 * head due. Times one pass of the outbox loop (claim up to 64, read the next due time) through
 * the store's connection, as the gateway pays it, and the same statement on the connection alone;
 * beside it, the query of the design before heads (oldest pending of each destination found
 * by NOT EXISTS over pending rows), on the same rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/sqlite-database.js';
import { sqliteOperations } from '../src/store/sqlite-operations.js';
import { SqliteStore } from '../src/store/sqlite-store.js';

const CHATS = 10_000;
const PER_CHAT = 20;
const CLAIM = 64;
const PASSES = 50;
const RETENTION = { doneMs: 86_400_000, failedMs: 7 * 86_400_000 };

const dir = mkdtempSync(join(tmpdir(), 'threadline-claim-'));
const path = join(dir, 'outbox.db');
const origin = JSON.stringify({ v: 1, session: { platform: 'webhook', chatType: 'dm', chatId: 'c', sessionId: 'tl_bench' } });

// Fill the store on a connection of its own, as the gateway would have over time.
const db = openDatabase(path);
const ops = sqliteOperations(db, RETENTION);
const fill = db.transaction(() => {
  for (let n = 0; n < PER_CHAT; n++) {
    for (let chat = 0; chat < CHATS; chat++) {
      ops.addDelivery({ id: `d-${chat}-${n}`, kind: 'reply', destination: `webhook:chat-${chat}`, text: 'hello', inReplyTo: null, origin, createdAt: 1_000 + n, attachment: null, replaces: null, button: null }, 61_000);
    }
  }
  // What a restart leaves: every head pending and due.
  ops.releaseLeases(1_000);
});
fill();
db.pragma('wal_checkpoint(TRUNCATE)');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** ms of each pass of `pass`, after the rows it claimed are made due again (outside the timing). */
function timeDirect(pass: () => unknown): number[] {
  const times: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    const started = process.hrtime.bigint();
    db.transaction(pass)();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    ops.releaseLeases(1_000);
  }
  return times;
}

const direct = timeDirect(() => ops.claim(10_000, CLAIM, 70_000));
const scanQuery = db.prepare(
  `SELECT id FROM deliveries d WHERE status = 'pending' AND due_at <= ? AND NOT EXISTS (SELECT 1 FROM deliveries o
     WHERE o.status = 'pending' AND o.destination = d.destination AND o.rowid < d.rowid) ORDER BY due_at, rowid LIMIT ?`,
);
const scan = timeDirect(() => scanQuery.all(10_000, CLAIM));
const open = ops.pressure(1_000).open;
db.close();

// The same pass through the store's connection, as the outbox makes it.
const store = await SqliteStore.open(path, RETENTION);
const threaded: number[] = [];
for (let i = 0; i < PASSES; i++) {
  const started = process.hrtime.bigint();
  const { deliveries } = await store.outbox.claim(10_000, CLAIM, 70_000);
  threaded.push(Number(process.hrtime.bigint() - started) / 1e6);
  if (deliveries.length !== CLAIM) throw new Error(`claimed ${deliveries.length}, not ${CLAIM}`);
  await store.outbox.releaseLeases(1_000);
}
await store.close();
rmSync(dir, { recursive: true, force: true });

console.log(`# ${open} open deliveries over ${CHATS} chats; a pass claims ${CLAIM}; medians of ${PASSES} passes`);
console.log(`RESULT claim_ms_200k=${median(threaded).toFixed(2)}`);
console.log(`RESULT claim_ms_200k_statement=${median(direct).toFixed(2)}`);
console.log(`RESULT claim_ms_200k_scan_query=${median(scan).toFixed(2)}`);
