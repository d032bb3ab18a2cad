/**
 * node --import tsx bench/outbox-queue.ts — the distributed outbox alone, in one process: D
 * destinations of P deliveries each, every platform call taking T ms (a slow API), sent by I
 * RedisOutbox instances of S slots (maxInFlight) each on a redis-server of its own. Reports the
 * makespan against the ideal (max of a destination's chain P×T and the work over the slots),
 * Redis commands a delivery (INFO's total_commands_processed, recording included), the most
 * sends to one destination seen at once (must be 1) and whether each destination kept its order.
 * BENCH_OUTBOX_SRC=<dir> runs another checkout's src (the partitioned outbox, say) the same way.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { startBenchRedis } from './distributed/redis-server.js';
import type { OutboundMessage, Platform } from '../src/platforms/platform.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const DESTINATIONS = env('BENCH_DESTINATIONS', 200);
const PER_DESTINATION = env('BENCH_PER_DESTINATION', 3);
const SEND_MS = env('BENCH_SEND_MS', 200);
const INSTANCES = env('BENCH_INSTANCES', 2);
const SLOTS = env('BENCH_SLOTS', 50);
const SRC = resolve(process.env['BENCH_OUTBOX_SRC'] ?? 'src');

const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(SRC, path)).href)) as T;
const { RedisOutbox } = await load<typeof import('../src/queue/redis-outbox.js')>('queue/redis-outbox.ts');
const { RedisOutboxRecords } = await load<typeof import('../src/queue/redis-outbox-records.js')>('queue/redis-outbox-records.ts');
const { RedisKeys } = await load<typeof import('../src/store/redis/redis-keys.js')>('store/redis/redis-keys.ts');
const { GatewayMetrics } = await load<typeof import('../src/telemetry/gateway-metrics.js')>('telemetry/gateway-metrics.ts');
// The partitioned outbox of an earlier checkout: its records take a queue per partition.
const partitioned = existsSync(resolve(SRC, 'queue/delivery-queues.ts'));

const redis = await startBenchRedis({ appendonly: false });
const connections: Redis[] = [];
const connect = (): Redis => {
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  connections.push(connection);
  return connection;
};
const keys = new RedisKeys('bench');
const running = new Map<string, number>();
const order = new Map<string, string[]>();
let maxPerDestination = 0;
let done = 0;
let finished: () => void = () => undefined;
const allDone = new Promise<void>((resolve) => (finished = resolve));

const platform: Platform = {
  name: 'webhook',
  register: () => undefined,
  describe: () => 'bench',
  send: async (message: OutboundMessage) => {
    const chat = message.destination.chatId;
    running.set(chat, (running.get(chat) ?? 0) + 1);
    maxPerDestination = Math.max(maxPerDestination, running.get(chat)!);
    order.set(chat, [...(order.get(chat) ?? []), message.id]);
    await new Promise((resolve) => setTimeout(resolve, SEND_MS));
    running.set(chat, running.get(chat)! - 1);
    if (++done === DESTINATIONS * PER_DESTINATION) finished();
  },
};

async function records(commands: Redis): Promise<InstanceType<typeof RedisOutboxRecords>> {
  if (!partitioned) {
    const queue = new Queue('deliveries', { connection: commands, prefix: keys.queuePrefix });
    return new RedisOutboxRecords({ redis: commands, queue, keys, deadLetterRetentionMs: 60_000 } as never);
  }
  const { DeliveryQueues } = await load<{ DeliveryQueues: new (...args: unknown[]) => { queue: (index: number) => Queue } }>('queue/delivery-queues.ts');
  const queues = new DeliveryQueues(commands, keys, 16);
  return new RedisOutboxRecords({ redis: commands, queue: (index: number) => queues.queue(index), keys, partitions: 16, deadLetterRetentionMs: 60_000 } as never);
}

const outboxes = await Promise.all(
  Array.from({ length: INSTANCES }, async () => {
    const shared = await records(connect());
    const outbox = new RedisOutbox({
      parts: {
        platforms: new Map([['webhook', platform]]),
        options: { maxAttempts: 5, giveUpAfterMs: 60_000, backoff: { baseMs: 5, maxMs: 20, maxRetryAfterMs: 1_000 }, maxInFlight: SLOTS, leaseMs: 30_000 },
        logger: pino({ level: 'silent' }),
        metrics: new GatewayMetrics(),
      },
      records: shared,
      connect,
      work: true,
    } as never);
    return { outbox, records: shared };
  }),
);
for (const { outbox } of outboxes) await outbox.start();

const origin = (chatId: string) => ({
  v: 1,
  session: { platform: 'webhook', chatType: 'dm', chatId, sessionId: `tl_${chatId}` },
}) as never;
const admin = new Redis(redis.url);
await admin.config('RESETSTAT');
const started = performance.now();
// Every destination's deliveries in order, the destinations side by side, recorded over the instances in turn.
await Promise.all(
  Array.from({ length: DESTINATIONS }, async (_, d) => {
    for (let n = 0; n < PER_DESTINATION; n++) {
      const id = `d${d}:${n}`;
      await outboxes[(d + n) % INSTANCES]!.records.add({ id, kind: 'reply', destination: { platform: 'webhook', chatId: `d${d}` }, text: id, origin: origin(`d${d}`), createdAt: Date.now() });
    }
  }),
);
await allDone;
const makespanMs = performance.now() - started;
const stats = await admin.info('stats');
const commands = Number(/total_commands_processed:(\d+)/.exec(stats)![1]);

const inOrder = [...order.entries()].every(([chat, ids]) => ids.join() === Array.from({ length: PER_DESTINATION }, (_, n) => `${chat}:${n}`).join());
const idealMs = Math.max(PER_DESTINATION * SEND_MS, (DESTINATIONS * PER_DESTINATION * SEND_MS) / (INSTANCES * SLOTS));
console.log(`${SRC}: ${DESTINATIONS} destinations × ${PER_DESTINATION} deliveries, sends of ${SEND_MS} ms, on ${INSTANCES} instances × ${SLOTS} slots`);
console.log(`RESULT outbox_makespan_ms=${makespanMs.toFixed(0)}`);
console.log(`RESULT outbox_ideal_ms=${idealMs.toFixed(0)}`);
console.log(`RESULT redis_commands_per_delivery=${(commands / (DESTINATIONS * PER_DESTINATION)).toFixed(1)}`);
console.log(`RESULT max_sends_to_one_destination_at_once=${maxPerDestination}`);
console.log(`RESULT each_destination_in_order=${inOrder}`);

for (const { outbox } of outboxes) await outbox.stop(Date.now() + 1_000);
admin.disconnect();
for (const connection of connections) connection.disconnect();
await redis.stop();
