/**
 * npm run bench:gateway — echo mode over loopback, three servers side by side under the same
 * load generator (autocannon, in this process; every server and the sink in processes of
 * their own):
 *   1. a bare forwarder (fastify, 202, one keep-alive POST; no store, queue or telemetry)
 *   2. threadline with telemetry off (OTEL_SDK_DISABLED)
 *   3. threadline with telemetry on (batch processor → a local OTLP receiver)
 * Rounds interleave the servers so drift and noise hit all three alike; each figure is the
 * median over rounds. Throughput is end to end: messages accepted with 2xx in a round,
 * divided by the time until the sink had received all their deliveries.
 * Then 1M messages through the in-process pipeline for heap growth (bench/gateway/memory.ts).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const CONNECTIONS = 64;
const CHATS = 200;
const MEMORY_MESSAGES = Number(process.env['BENCH_MEMORY_MESSAGES'] ?? 1_000_000);
const root = new URL('..', import.meta.url).pathname;

interface Sink {
  readonly url: string;
  stats(reset?: boolean): Promise<{ deliveries: number; traceExports: number }>;
  readonly child: ChildProcess;
}

async function startSink(): Promise<Sink> {
  const child = fork(join(root, 'bench/gateway/sink.ts'), { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    stats: (reset = false) =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as { deliveries: number; traceExports: number }));
        child.send({ reset });
      }),
  };
}

async function startServer(args: string[], env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /listening on (http:\/\/\S+)/.exec(line);
    if (match) return { url: match[1]!, child };
  }
  throw new Error(`server ${args.join(' ')} exited before listening`);
}

interface Round {
  readonly msgsPerSecond: number;
  readonly p99Ms: number;
  readonly refused: number;
}

async function measure(url: string, sink: Sink): Promise<Round> {
  await sink.stats(true);
  let counter = 0;
  const started = performance.now();
  const result = await autocannon({
    url: `${url}/v1/messages`,
    connections: CONNECTIONS,
    duration: SECONDS,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request) => {
          const n = counter++;
          const chat = n % CHATS;
          const body = { chat_id: `chat:${chat}`, ...(chat % 2 === 0 ? { thread_id: `t/${chat}` } : {}), text: `m${n}` };
          return { ...request, body: JSON.stringify(body) };
        },
      },
    ],
  });
  const accepted = result['2xx'];
  for (;;) {
    const { deliveries } = await sink.stats();
    if (deliveries >= accepted) break;
    if (performance.now() - started > (SECONDS + 60) * 1000) throw new Error(`only ${deliveries}/${accepted} delivered`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  return { msgsPerSecond: accepted / seconds, p99Ms: result.latency.p99, refused: result.non2xx };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** What bench/gateway/memory.ts prints, in MB and seconds. */
interface MemoryResult {
  readonly growth: number;
  readonly rssGrowth: number;
  readonly seconds: number;
  readonly messages: number;
}

async function memoryGrowth(): Promise<MemoryResult> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/gateway/memory.ts', String(MEMORY_MESSAGES)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let last = '';
  for await (const line of createInterface({ input: child.stdout! })) last = line;
  return JSON.parse(last) as MemoryResult;
}

const sink = await startSink();
const dirs = [mkdtempSync(join(tmpdir(), 'bench-off-')), mkdtempSync(join(tmpdir(), 'bench-on-'))];
const threadline = ['--import', './dist/telemetry/register.js', 'dist/cli/main.js'];
const common = {
  PORT: '0',
  THREADLINE_WEBHOOK_DELIVERY_URL: `${sink.url}/deliveries`,
  THREADLINE_LOG_LEVEL: 'warn',
  THREADLINE_QUEUE_CAPACITY: '100000',
};
const servers = {
  bare: await startServer(['--import', 'tsx', 'bench/gateway/bare-forwarder.ts'], { DELIVERY_URL: `${sink.url}/deliveries` }),
  off: await startServer(threadline, { ...common, THREADLINE_DATA_DIR: dirs[0]!, OTEL_SDK_DISABLED: 'true' }),
  on: await startServer(threadline, {
    ...common,
    THREADLINE_DATA_DIR: dirs[1]!,
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  }),
};

const rounds: Record<keyof typeof servers, Round[]> = { bare: [], off: [], on: [] };
for (const name of Object.keys(servers) as (keyof typeof servers)[]) await measure(servers[name].url, sink); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const name of Object.keys(servers) as (keyof typeof servers)[]) rounds[name].push(await measure(servers[name].url, sink));
}
const traceExports = (await sink.stats()).traceExports;
for (const server of Object.values(servers)) server.child.kill('SIGTERM');

const figure = (name: keyof typeof servers) => ({
  msgs: median(rounds[name].map((r) => r.msgsPerSecond)),
  p99: median(rounds[name].map((r) => r.p99Ms)),
  refused: rounds[name].reduce((sum, r) => sum + r.refused, 0),
});
const bare = figure('bare');
const off = figure('off');
const on = figure('on');
console.log(`node ${process.version} · ${ROUNDS} rounds × ${SECONDS} s · ${CONNECTIONS} connections · ${CHATS} chats`);
console.log('server                      msg/s   p99 ms  non-2xx   each round (msg/s)');
for (const [label, name] of [['1 bare forwarder', 'bare'], ['2 threadline, telemetry off', 'off'], ['3 threadline, telemetry on', 'on']] as const) {
  const f = figure(name);
  const each = rounds[name].map((r) => r.msgsPerSecond.toFixed(0)).join(' ');
  console.log(`${label.padEnd(27)} ${f.msgs.toFixed(0).padStart(6)} ${f.p99.toFixed(1).padStart(8)} ${String(f.refused).padStart(8)}   ${each}`);
}
console.log(`OTLP export requests received while telemetry was on: ${traceExports}`);

console.log(`\n${MEMORY_MESSAGES} messages through the in-process pipeline for heap growth…`);
const memory = await memoryGrowth();
console.log(`heap growth after GC: ${memory.growth.toFixed(2)} MB, RSS growth ${memory.rssGrowth.toFixed(1)} MB (${(memory.messages / memory.seconds).toFixed(0)} msg/s in-process)`);

const onVsOff = on.msgs / off.msgs;
const vsBare = on.msgs / bare.msgs;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
console.log(`\ntelemetry on / off        ${onVsOff.toFixed(2)}  target ≥ 0.85  ${verdict(onVsOff >= 0.85)}`);
console.log(`telemetry on / bare       ${vsBare.toFixed(2)}  target ≥ 0.50  ${verdict(vsBare >= 0.5)}`);
console.log(`heap growth               ${memory.growth.toFixed(2)} MB  target ≤ 10  ${verdict(memory.growth <= 10)}`);
console.log(`RESULT telemetry_on_vs_off=${onVsOff.toFixed(2)}`);
console.log(`RESULT vs_bare_forwarder=${vsBare.toFixed(2)}`);
console.log(`RESULT echo_msgs_per_s=${on.msgs.toFixed(0)}`);
console.log(`RESULT p99_ms=${on.p99.toFixed(1)}`);
console.log(`RESULT heap_growth_mb=${memory.growth.toFixed(2)}`);

sink.child.kill();
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
