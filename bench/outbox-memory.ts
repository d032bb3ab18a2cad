/**
 * Memory after many distinct long-id chats: the whole gateway in this process (webhook
 * platform, SQLite store on its own thread, telemetry as `npm start` has it: spans to the
 * trace file in the data dir), replies delivered to a counting receiver on 127.0.0.1.
 * After a warm-up, 20,000 chats each send one message over HTTP (64 at a time), each with a
 * chat_id of 256 characters holding ':' and non-ASCII characters, so that percent-encoding
 * makes its session key about four times as long. Once every reply has arrived, the
 * process's RSS and the main thread's heap are measured after GC, against the same
 * measure taken before.
 *
 *   node --expose-gc --import tsx bench/outbox-memory.ts
 *
 * BENCH_CHATS (default 20000), BENCH_WARMUP (warm-up messages, default 5000),
 * BENCH_TELEMETRY=off (OTEL_SDK_DISABLED) and BENCH_DETAIL=1 (heap spaces, /proc/self/status
 * and the store file's size) change the run. The RSS figure moves by some ±10 MB from run to
 * run (how much old space V8 keeps beyond the live heap, what the allocators keep); the heap
 * figure by under 1 MB. Prints RESULT lines; exits by itself.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { startCountingReceiver } from './counting-receiver.js';

const CHATS = Number(process.env['BENCH_CHATS'] ?? 20_000);
/**
 * The warm-up: 5,000 messages from 64 chats, the same paths with ids as long, so code is
 * compiled, connections are open and statements prepared before the first measure. Old
 * space is left near its size at start: a warm-up as long as the run (BENCH_WARMUP=20000)
 * leaves room that the chats' growth then fills unseen.
 */
const WARMUP_CHATS = 64;
const WARMUP_MESSAGES = Number(process.env['BENCH_WARMUP'] ?? 5_000);
const CONCURRENCY = 64;
const ID_LENGTH = 256;
const TELEMETRY_OFF = process.env['BENCH_TELEMETRY'] === 'off';
const DETAIL = process.env['BENCH_DETAIL'] === '1';
const MB = 2 ** 20;

const gc = (globalThis as { gc?: (options?: object) => void }).gc;
/**
 * Node 22 and later (V8 12+) keep pages a GC emptied in a pool, resident, until a
 * memory-reducing GC flushes it; a plain gc() does not. There it is asked for once after
 * the plain ones, so RSS shows what the process holds, not what V8 keeps for reuse (printed
 * apart as the pooled figure). On Node 20 that flavour is no full GC: plain gc() only.
 */
const POOLED_PAGES = Number(process.versions.node.split('.')[0]) >= 22;
if (gc === undefined) throw new Error('run with node --expose-gc --import tsx bench/outbox-memory.ts');

/** 256 characters (UTF-16 units and code points alike) that percent-encode to about 1,000. */
const FILL = 'ü:語-x'.repeat(ID_LENGTH);
function chatId(prefix: string, n: number): string {
  const head = `${prefix}:${n}:`;
  return head + FILL.slice(0, ID_LENGTH - head.length);
}

// The far end of the webhook: counts deliveries, answers 200, keeps nothing.
const receiver = await startCountingReceiver();
const receiverUrl = `http://127.0.0.1:${receiver.port}/deliveries`;

// The gateway's configuration comes from the environment, read by register and the config.
const dataDir = mkdtempSync(join(tmpdir(), 'threadline-outbox-memory-'));
Object.assign(process.env, {
  PORT: '0',
  HOST: '127.0.0.1',
  THREADLINE_DATA_DIR: dataDir,
  THREADLINE_WEBHOOK_DELIVERY_URL: receiverUrl,
  THREADLINE_LOG_LEVEL: 'warn',
  ...(TELEMETRY_OFF ? { OTEL_SDK_DISABLED: 'true' } : {}),
});
// Telemetry first, as `node --import ./dist/telemetry/register.js` does: the instrumentations
// patch http before fastify loads it.
const { telemetry } = await import('../src/telemetry/register.js');
const { readGatewayConfig } = await import('../src/gateway/gateway-config.js');
const { startGateway } = await import('../src/start/start-gateway.js');
const { createLogger } = await import('../src/telemetry/logger.js');

const running = await startGateway(readGatewayConfig(), { logger: createLogger({ level: telemetry.config.logLevel }) });
const target = new URL(`${running.url}/v1/messages`);

// The load's own requests must not be traced: they would be spans of the benchmark, not the gateway's.
const client = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
function post(body: string): Promise<number> {
  return context.with(suppressTracing(ROOT_CONTEXT), () => new Promise<number>((resolve, reject) => {
    const request = httpRequest(
      target,
      { method: 'POST', agent: client, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  }));
}

let sent = 0;
/** Sends `count` messages, `CONCURRENCY` at a time; message i comes from chat `chatOf(i)`. */
async function load(count: number, chatOf: (i: number) => string): Promise<void> {
  let next = 0;
  const refused: number[] = [];
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const status = await post(JSON.stringify({ chat_id: chatOf(i), text: `m${i}` }));
      if (status !== 202) refused.push(status);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  if (refused.length > 0) throw new Error(`${refused.length} messages refused (first answer ${refused[0]})`);
  sent += count;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every reply delivered, the queue empty; bounded to two minutes. */
async function settle(): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (receiver.count() < sent || running.gateway.queued > 0) {
    if (Date.now() > deadline) throw new Error(`only ${receiver.count()}/${sent} replies delivered after 2 minutes`);
    await sleep(20);
  }
  // The records of sent deliveries commit in the background, and the batch span processor
  // exports every 5 s (or at 2,048 spans): let both finish.
  await sleep(6_000);
}

interface Sample {
  readonly rss: number;
  /** RSS before the memory-reducing GC: with V8's page pool (Node 22 and later). */
  readonly pooledRss: number;
  readonly heapUsed: number;
  /** The main thread's V8 heap as committed, and of it the young generation. */
  readonly heapTotal: number;
  readonly newSpace: number;
  readonly detail: string;
}

const newSpaceSize = (): number => (getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0) / MB;

/**
 * RSS and heap once the gateway has idled and collected. V8 gives back its young generation
 * (32 MB under this load) only at a GC that finds allocation slow over its last 5 seconds or
 * so: measured after a few quick GCs it was sometimes back and sometimes not, ±30 MB of RSS
 * either way. So: a GC a second until it is back (at most 15), then two more. Nothing here
 * allocates much until the figures are read.
 */
async function sample(label: string): Promise<Sample> {
  for (let i = 0; i < 15 && (i < 3 || newSpaceSize() > 2); i++) {
    gc!();
    await sleep(1_000);
  }
  for (let i = 0; i < 2; i++) {
    gc!();
    await sleep(100);
  }
  const pooledRss = process.memoryUsage().rss / MB;
  if (POOLED_PAGES) gc!({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const usage = process.memoryUsage();
  const spaces = getHeapSpaceStatistics();
  const newSpace = newSpaceSize();
  let detail = '';
  if (DETAIL) {
    const used = spaces
      .filter((s) => s.space_size > MB)
      .map((s) => `${s.space_name} ${(s.space_used_size / MB).toFixed(1)}/${(s.space_size / MB).toFixed(1)}`)
      .join(', ');
    const status = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .filter((line) => /^(RssAnon|RssFile|RssShmem):/.test(line))
      .map((line) => line.replace(/\s+/g, ' '))
      .join(', ');
    const storeFile = ['threadline.db', 'threadline.db-wal']
      .map((name) => statSync(join(dataDir, name), { throwIfNoEntry: false })?.size ?? 0)
      .reduce((a, b) => a + b, 0);
    detail =
      `  ${label}: external ${(usage.external / MB).toFixed(1)} MB, arrayBuffers ${(usage.arrayBuffers / MB).toFixed(1)} MB, ` +
      `store file and WAL ${(storeFile / MB).toFixed(1)} MB; ${status}\n  ${label}: heap spaces (used/size MB) ${used}`;
  }
  return { rss: usage.rss / MB, pooledRss, heapUsed: usage.heapUsed / MB, heapTotal: usage.heapTotal / MB, newSpace, detail };
}

// Warm-up: the same paths (long ids included), from a few chats used again and again.
await load(WARMUP_MESSAGES, (i) => chatId('warm', i % WARMUP_CHATS));
await settle();
const before = await sample('before');

const started = performance.now();
await load(CHATS, (i) => chatId('chat', i));
const seconds = (performance.now() - started) / 1000;
await settle();
const after = await sample('after');

await running.stop();
await telemetry.shutdown();
client.destroy();
receiver.server.closeAllConnections();
receiver.server.close();
rmSync(dataDir, { recursive: true, force: true });

const sampleKey = `v1:webhook:dm:${encodeURIComponent(chatId('chat', CHATS - 1))}::`;
console.log(
  `${CHATS} chats × 1 message, chat_id ${ID_LENGTH} characters (session key ${sampleKey.length}), ` +
    `${CONCURRENCY} at a time, telemetry ${TELEMETRY_OFF ? 'off' : telemetry.config.exporter}: ${(CHATS / seconds).toFixed(0)} msg/s, ` +
    `${receiver.count()} replies delivered`,
);
console.log(
  `RSS  ${before.rss.toFixed(1)} → ${after.rss.toFixed(1)} MB; heapUsed ${before.heapUsed.toFixed(1)} → ${after.heapUsed.toFixed(1)} MB ` +
    `(after GC); heap committed ${before.heapTotal.toFixed(1)} → ${after.heapTotal.toFixed(1)} MB, ` +
    `of it young generation ${before.newSpace.toFixed(1)} → ${after.newSpace.toFixed(1)} MB`,
);
if (DETAIL) console.log(`${before.detail}\n${after.detail}`);
console.log(`RESULT rss_20k_long_chats_mb=${(after.rss - before.rss).toFixed(1)}`);
console.log(`RESULT heap_20k_long_chats_mb=${(after.heapUsed - before.heapUsed).toFixed(1)}`);
// With V8's page pool still resident (the same as the first figure on Node 20).
console.log(`RESULT rss_20k_long_chats_pooled_mb=${(after.pooledRss - before.pooledRss).toFixed(1)}`);
process.exit(0);
