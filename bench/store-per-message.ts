/**
 * `node --import tsx bench/store-per-message.ts`: the store's SQLite cost of one echo message,
 * the calls the gateway makes from intake to the delivery marked done (accept, addDelivery,
 * markDone, completeMessage), through SqliteConnection on a WAL file, as CPU µs a message
 * (the process's user and system time, so commits and checkpoints count). Two shapes: one
 * message at a time (three commits a message, as under a light load) and 16 in flight (the
 * calls of one event-loop turn share a commit). Median of interleaved rounds, each on a fresh file.
 * `STORE_BASELINE=<dir>` runs another copy of src/ side by side (its sqlite-connection.js).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SqliteConnection } from '../src/store/sqlite-connection.js';

const MESSAGES = Number(process.env['MESSAGES'] ?? 4_000);
const WARMUP = 1_000;
const ROUNDS = Number(process.env['ROUNDS'] ?? 7);
const CHATS = 200;
const RETENTION = { doneMs: 86_400_000, failedMs: 7 * 86_400_000 };
const CHECKS = { maxOpenPerDestination: 1_000, maxOpenTotal: 100_000 };
// The size of a real snapshot: routing, session and the span it was accepted under.
const ROUTING = JSON.stringify({
  v: 1,
  session: { platform: 'webhook', chatType: 'dm', chatId: 'chat:17', threadId: 't/17', userId: 'u-17', sessionId: 'tl_4f1c2a9be0d37a65' },
  origin: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 },
  baggage: {},
});

type Open = (path: string, retention: typeof RETENTION) => SqliteConnection;

async function load(srcDir: string): Promise<Open> {
  const module = (await import(pathToFileURL(join(srcDir, 'store/sqlite-connection.ts')).href)) as typeof import('../src/store/sqlite-connection.js');
  return (path, retention) => module.SqliteConnection.open(path, retention);
}

let sequence = 0;
async function echo(connection: SqliteConnection, n: number): Promise<void> {
  // Time-ordered, as the gateway's ids are.
  const id = `m-${String(++sequence).padStart(12, '0')}`;
  const destination = `webhook:chat%3A${n % CHATS}`;
  const now = Date.now();
  const accepted = await connection.call('acceptMessage', id, ROUTING, `text ${n}`, now, { destination, ...CHECKS });
  if (accepted.status !== 'accepted') throw new Error(`refused: ${JSON.stringify(accepted)}`);
  const added = await connection.call('addDelivery', { id: `${id}/1`, kind: 'reply', destination, text: `echo ${n}`, inReplyTo: id, origin: ROUTING, createdAt: now, attachment: null, replaces: null, button: null }, now + 60_000);
  if (added !== 'claimed') throw new Error(`not claimed: ${added}`);
  // As the gateway makes them: the turn ends without waiting for the record of its reply.
  const done = connection.call('markDone', `${id}/1`, Date.now(), now + 60_000);
  await connection.call('completeMessage', id);
  await done;
}

async function drive(connection: SqliteConnection, from: number, count: number, inFlight: number): Promise<void> {
  let next = from;
  const lane = async () => {
    while (next < from + count) await echo(connection, next++);
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

/** CPU µs a message over `MESSAGES` after a warm-up, on a fresh store. */
async function round(open: Open, inFlight: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-store-bench-'));
  const connection = open(join(dir, 'store.db'), RETENTION);
  try {
    await drive(connection, 0, WARMUP, inFlight);
    const before = process.cpuUsage();
    await drive(connection, WARMUP, MESSAGES, inFlight);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / MESSAGES;
  } finally {
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const builds: [name: string, open: Open][] = [['current', await load(resolve(import.meta.dirname, '../src'))]];
const baseline = process.env['STORE_BASELINE'];
if (baseline !== undefined) builds.push(['baseline', await load(resolve(baseline))]);

for (const inFlight of [1, 16]) {
  const samples = new Map<string, number[]>(builds.map(([name]) => [name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    // The starting build rotates, so a slow phase of the machine hits each alike.
    for (let i = 0; i < builds.length; i++) {
      const [name, open] = builds[(r + i) % builds.length]!;
      samples.get(name)!.push(await round(open, inFlight));
    }
  }
  for (const [name, values] of samples) {
    console.log(
      `${inFlight === 1 ? 'one at a time' : `${inFlight} in flight`}  ${name.padEnd(8)} ${median(values).toFixed(1)} µs/message  (rounds: ${values.map((v) => v.toFixed(0)).join(' ')})`,
    );
  }
}
