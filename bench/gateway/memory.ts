/**
 * Heap growth over 1M messages through the in-process pipeline (store, scheduler, agent,
 * deliveries, spans to a batch processor), after GC. Run with --expose-gc; prints one JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ExportResultCode } from '@opentelemetry/core';
import { pino } from 'pino';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { Gateway } from '../../src/gateway/gateway.js';
import type { OutboundMessage, Platform } from '../../src/platforms/platform.js';
import { inboundContext } from '../../src/session/index.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { installContext } from '../../src/telemetry/install-context.js';
import { SessionSpanProcessor } from '../../src/telemetry/session-span-processor.js';

const total = Number(process.argv[2] ?? 1_000_000);
const chats = 200;
const window = 2_000;

let exported = 0;
const countingExporter: SpanExporter = {
  export: (spans: ReadableSpan[], done) => {
    exported += spans.length;
    done({ code: ExportResultCode.SUCCESS });
  },
  shutdown: async () => {},
};
installContext();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SessionSpanProcessor(), new BatchSpanProcessor(countingExporter)] }),
);

let delivered = 0;
const sink: Platform = {
  name: 'webhook',
  register: () => {},
  send: async (_message: OutboundMessage) => {
    delivered++;
  },
  describe: () => 'counting sink',
};
const dir = mkdtempSync(join(tmpdir(), 'threadline-memory-'));
const store = await SqliteStore.open(join(dir, 'bench.db'), { doneMs: 0, failedMs: 0 });
const gateway = new Gateway({
  store,
  platforms: [sink],
  agent: new CommandAgent(new Map()),
  logger: pino({ level: 'silent' }),
  concurrency: 64,
  queueCapacity: window * 2,
  perUserGroupSessions: false,
  strictRouting: false,
  outbox: {
    maxAttempts: 3,
    giveUpAfterMs: 86_400_000,
    backoff: { baseMs: 10, maxMs: 100, maxRetryAfterMs: 3_600_000 },
    maxInFlight: 64,
    leaseMs: 60_000,
    maxOpenPerDestination: 1_000,
    maxOpenTotal: 100_000,
  },
});
await gateway.start();

const inbound = inboundContext({});
async function send(from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i += window) {
    const batch = [];
    for (let j = i; j < Math.min(i + window, from + count); j++) {
      batch.push(gateway.accept({ session: { platform: 'webhook', chatType: 'dm', chatId: `chat-${j % chats}` }, text: `m${j}` }, inbound));
    }
    await Promise.all(batch);
    while (gateway.queued > window) await new Promise((resolve) => setImmediate(resolve));
  }
  while (gateway.queued > 0) await new Promise((resolve) => setTimeout(resolve, 5));
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc!();
  (globalThis as { gc?: () => void }).gc!();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

// RSS reaches its plateau (the heap's high-water mark under this window) within about
// 100,000 messages; growth is measured from there.
const warmup = 100_000;
await send(0, warmup);
await new Promise((resolve) => setTimeout(resolve, 100));
const before = heapMb();
const rssBefore = process.memoryUsage().rss / 2 ** 20;
const started = performance.now();
await send(warmup, total);
const seconds = (performance.now() - started) / 1000;
await new Promise((resolve) => setTimeout(resolve, 6000)); // let the batch processor's timer flush
const after = heapMb();
// RSS counts every thread the process has; heapUsed only the event loop's isolate.
const rssGrowth = process.memoryUsage().rss / 2 ** 20 - rssBefore;
await gateway.stop(1000);
await store.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ messages: total, delivered: delivered - warmup, spans: exported, seconds, before, after, growth: after - before, rssGrowth }));
process.exit(0);
