/**
 * node --import tsx bench/turn-queue.ts — the distributed turn queue alone, in one process: S
 * conversations of P messages each, turns waiting T ms (a model's wait), spread over I
 * RedisTurnQueue instances of concurrency C each on a redis-server of its own. Reports the
 * makespan against the ideal (max of a conversation's chain P×T and the work over the slots),
 * Redis commands a message (INFO's total_commands_processed), the most turns of one
 * conversation seen running at once (must be 1) and whether each conversation kept its order.
 * BENCH_TURN_SRC=<dir> runs another checkout's src (the partitioned queue, say) the same way.
 */
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startBenchRedis } from './distributed/redis-server.js';
import type { TurnJob, TurnQueue } from '../src/gateway/turn-queue.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SESSIONS = env('BENCH_SESSIONS', 200);
const PER_SESSION = env('BENCH_PER_SESSION', 3);
const TURN_MS = env('BENCH_TURN_MS', 200);
const INSTANCES = env('BENCH_INSTANCES', 2);
const CONCURRENCY = env('BENCH_CONCURRENCY', 50);
const SRC = resolve(process.env['BENCH_TURN_SRC'] ?? 'src');

const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(SRC, path)).href)) as T;
const { RedisTurnQueue } = await load<typeof import('../src/queue/redis-turn-queue.js')>('queue/redis-turn-queue.ts');
const { RedisKeys } = await load<typeof import('../src/store/redis/redis-keys.js')>('store/redis/redis-keys.ts');
const session = await load<typeof import('../src/session/index.js')>('session/index.ts');

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
let maxPerConversation = 0;
let done = 0;
let finished: () => void = () => undefined;
const allDone = new Promise<void>((resolve) => (finished = resolve));

const queues: TurnQueue[] = Array.from(
  { length: INSTANCES },
  // partitions: what the partitioned queue of an earlier checkout needs; the mailboxes ignore it.
  () => new RedisTurnQueue({ connection: connect, keys, concurrency: CONCURRENCY, partitions: 16, work: true, logger: pino({ level: 'silent' }) } as never),
);
for (const queue of queues) {
  await queue.start(async (job) => {
    const chat = job.session.chatId;
    running.set(chat, (running.get(chat) ?? 0) + 1);
    maxPerConversation = Math.max(maxPerConversation, running.get(chat)!);
    order.set(chat, [...(order.get(chat) ?? []), job.id]);
    await new Promise((resolve) => setTimeout(resolve, TURN_MS));
    running.set(chat, running.get(chat)! - 1);
    job.span.end();
    if (++done === SESSIONS * PER_SESSION) finished();
  });
}

const tracer = trace.getTracer('bench');
function turnJob(chatId: string, id: string): TurnJob {
  const routing = session.createSession({ platform: 'telegram', chatType: 'group', chatId, threadId: '7', userId: 'u-1' });
  const key = session.sessionKey({ platform: routing.platform, chatType: routing.chatType, chatId, threadId: routing.threadId, userId: undefined });
  const entered = session.contextWithSession(ROOT_CONTEXT, session.withSessionId(routing, session.sessionIdOfKey(key, 0)));
  const span = tracer.startSpan('gateway.message', { kind: SpanKind.SERVER }, entered);
  const context = trace.setSpan(entered, span);
  const inSession = session.requireSession(context);
  return { id, sessionId: inSession.sessionId, session: inSession, key, text: id, context, span, routing: session.captureRouting(context) };
}

const admin = new Redis(redis.url);
await admin.config('RESETSTAT');
const started = performance.now();
// Every conversation's messages in order, the conversations side by side, over the instances in turn.
await Promise.all(
  Array.from({ length: SESSIONS }, async (_, s) => {
    for (let m = 0; m < PER_SESSION; m++) await queues[(s + m) % INSTANCES]!.offer(turnJob(`c${s}`, `c${s}:m${m}`));
  }),
);
await allDone;
const makespanMs = performance.now() - started;
const stats = await admin.info('stats');
const commands = Number(/total_commands_processed:(\d+)/.exec(stats)![1]);

const inOrder = [...order.entries()].every(([chat, ids]) => ids.join() === Array.from({ length: PER_SESSION }, (_, m) => `${chat}:m${m}`).join());
const idealMs = Math.max(PER_SESSION * TURN_MS, (SESSIONS * PER_SESSION * TURN_MS) / (INSTANCES * CONCURRENCY));
console.log(`${SRC}: ${SESSIONS} conversations × ${PER_SESSION} turns of ${TURN_MS} ms on ${INSTANCES} instances × concurrency ${CONCURRENCY}`);
console.log(`RESULT turn_queue_makespan_ms=${makespanMs.toFixed(0)}`);
console.log(`RESULT turn_queue_ideal_ms=${idealMs.toFixed(0)}`);
console.log(`RESULT redis_commands_per_message=${(commands / (SESSIONS * PER_SESSION)).toFixed(1)}`);
console.log(`RESULT max_turns_of_one_conversation_at_once=${maxPerConversation}`);
console.log(`RESULT each_conversation_in_order=${inOrder}`);

for (const queue of queues) await queue.close('the bench is over');
admin.disconnect();
for (const connection of connections) connection.disconnect();
await redis.stop();
