/**
 * npm run bench:gateway — server CPU per message at a fixed offered load below saturation,
 * echo mode over loopback. Four servers, each a process of its own:
 *   1. a bare forwarder (fastify, 202, one keep-alive POST; no store, queue or telemetry)
 *   2. a hand-written durable forwarder (fastify, better-sqlite3 on the main thread, an outbox)
 *   3. threadline with telemetry off (OTEL_SDK_DISABLED)
 *   4. threadline with telemetry on, as `npm start` has it (spans to the trace file)
 * The load generator (this process) and the delivery sink (a process of its own) are the
 * same for every server, so their cost is the same too; only the server's CPU is counted.
 * Rounds interleave the servers, each round starting with a different one, so drift and other
 * processes' bursts hit all alike; each figure is the median over rounds. Then saturation
 * throughput and p99 (reported, not targeted) and heap growth over 1M in-process messages.
 * BENCH_BASELINE_DIST=<dir> adds a second threadline build, telemetry off and on, side by side.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { median, quantile } from './harness.js';
import { measureAtFixedLoad, messageBody, type FixedLoad, type FixedLoadRound } from './gateway/fixed-load.js';
import { saturate, type Saturation } from './gateway/saturation.js';
import { benchServers, root, startServer, stopServer, type RunningServer } from './gateway/servers.js';
import { startSink } from './gateway/sink-process.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_ROUNDS', 8);
const LOAD: FixedLoad = { rate: env('BENCH_RATE', 800), warmupSeconds: env('BENCH_WARMUP_SECONDS', 2), windowSeconds: env('BENCH_SECONDS', 10) };
const SATURATION_ROUNDS = env('BENCH_SATURATION_ROUNDS', 3);
const SATURATION_SECONDS = env('BENCH_SATURATION_SECONDS', 5);
const MEMORY_MESSAGES = env('BENCH_MEMORY_MESSAGES', 1_000_000);
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';
const BASELINE_DIST = process.env['BENCH_BASELINE_DIST'];

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

const rotate = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]!);
const fixed = (value: number, digits = 0) => value.toFixed(digits);

const sink = await startSink();
const specs = benchServers({ deliveryUrl: `${sink.url}/deliveries`, dist: DIST, baselineDist: BASELINE_DIST });
const servers: RunningServer[] = [];
for (const spec of specs) servers.push(await startServer(spec));

const header =
  `node ${process.version} · ${cpus()[0]?.model ?? 'unknown CPU'} ×${cpus().length} · load average ${loadavg()[0]!.toFixed(1)} · ` +
  `${LOAD.rate} msg/s offered · ${ROUNDS} rounds of a ${LOAD.windowSeconds} s window after ${LOAD.warmupSeconds} s`;
console.log(header);

// Unmeasured: JIT tiers, SQLite's files and the trace file settle before the first round.
for (const server of servers) await measureAtFixedLoad(server, sink, { ...LOAD, warmupSeconds: 0, windowSeconds: 3 });

const rounds = new Map<string, FixedLoadRound[]>(servers.map((s) => [s.spec.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const line: string[] = [];
  for (const server of rotate(servers, round)) {
    const result = await measureAtFixedLoad(server, sink, LOAD);
    rounds.get(server.spec.name)!.push(result);
    line.push(`${server.spec.name} ${fixed(result.cpuUs)} µs`);
  }
  console.error(`round ${round + 1}/${ROUNDS}: ${line.join(' · ')}`);
}

const saturation = new Map<string, Saturation[]>(servers.map((s) => [s.spec.name, []]));
for (let round = 0; round < SATURATION_ROUNDS; round++) {
  for (const server of rotate(servers, round)) saturation.get(server.spec.name)!.push(await saturate(server.url, sink, SATURATION_SECONDS, messageBody));
}

// The trace file is the proof that telemetry was on: spans reached it while the rounds ran.
const traceFiles = servers
  .filter((s) => s.spec.name.startsWith('on'))
  .map((s) => ({ name: s.spec.name, path: join(s.dataDir, 'traces.jsonl') }))
  .map(({ name, path }) => ({ name, bytes: existsSync(path) ? statSync(path).size : 0 }));
for (const server of servers) await stopServer(server);
sink.stop();

// --- report --------------------------------------------------------------------------------

const series = (name: string, pick: (r: FixedLoadRound) => number) => rounds.get(name)!.map(pick);
const cpuOf = (name: string) => median(series(name, (r) => r.cpuUs));
/** Per-round ratios: the two servers ran moments apart, so these show the run's spread. */
const roundRatios = (a: string, b: string) => {
  const bs = series(b, (r) => r.cpuUs);
  return series(a, (r) => r.cpuUs).map((v, i) => v / bs[i]!);
};
const spread = (values: readonly number[], digits = 0) => `${fixed(Math.min(...values), digits)}–${fixed(Math.max(...values), digits)}`;

console.log(`\nserver CPU a message at ${LOAD.rate} msg/s (/proc/<pid>/stat: every thread of the server process), medians over ${ROUNDS} rounds`);
console.log(`${'server'.padEnd(48)} ${'µs/msg'.padStart(7)} ${'event loop'.padStart(10)} ${'other threads'.padStart(13)}   ${'rounds'.padEnd(10)} ${'p99 ms'.padStart(7)}  refused`);
for (const [index, server] of servers.entries()) {
  const name = server.spec.name;
  const cpu = series(name, (r) => r.cpuUs);
  const loop = median(series(name, (r) => r.eventLoopUs));
  const others = median(series(name, (r) => r.cpuUs - r.eventLoopUs));
  const p99 = median(series(name, (r) => r.p99Ms));
  const refused = rounds.get(name)!.reduce((sum, r) => sum + r.refused + r.failed, 0);
  const label = `${index + 1} ${server.spec.label}`;
  console.log(
    `${label.padEnd(48)} ${fixed(median(cpu)).padStart(7)} ${fixed(loop).padStart(10)} ${fixed(others).padStart(13)}   ${spread(cpu).padEnd(10)} ${fixed(p99, 1).padStart(7)}  ${refused}`,
  );
}
for (const { name, bytes } of traceFiles) console.log(`trace file of ${name}: ${fixed(bytes / 2 ** 20, 1)} MB (rotated at 64 MB)`);

if (SATURATION_ROUNDS > 0) {
  console.log(`\nsaturation (autocannon, 64 connections, ${SATURATION_SECONDS} s, end to end), medians over ${SATURATION_ROUNDS} rounds`);
  for (const server of servers) {
    const runs = saturation.get(server.spec.name)!;
    const msgs = runs.map((r) => r.msgsPerSecond);
    console.log(`${server.spec.label.padEnd(48)} ${fixed(median(msgs)).padStart(7)} msg/s (${spread(msgs)})  p99 ${fixed(median(runs.map((r) => r.p99Ms)), 1)} ms`);
  }
}

let memory: MemoryResult | undefined;
if (MEMORY_MESSAGES > 0) {
  console.log(`\n${MEMORY_MESSAGES} messages through the in-process pipeline for heap growth…`);
  memory = await memoryGrowth();
  console.log(`heap growth after GC: ${fixed(memory.growth, 2)} MB, RSS growth ${fixed(memory.rssGrowth, 1)} MB (${fixed(memory.messages / memory.seconds)} msg/s in-process)`);
}

const ratio = (a: string, b: string) => Number((cpuOf(a) / cpuOf(b)).toFixed(2));
const targets = [
  { name: 'cpu_on_vs_off', value: ratio('on', 'off'), rounds: roundRatios('on', 'off'), target: 1.2 },
  { name: 'cpu_off_vs_durable', value: ratio('off', 'durable'), rounds: roundRatios('off', 'durable'), target: 1.0 },
];
const compared = BASELINE_DIST === undefined ? [] : [
  { name: 'cpu_off_vs_baseline', value: ratio('off', 'off_baseline'), rounds: roundRatios('off', 'off_baseline') },
  { name: 'cpu_on_vs_baseline', value: ratio('on', 'on_baseline'), rounds: roundRatios('on', 'on_baseline') },
];
console.log('');
for (const { name, value, rounds: each } of [...targets, ...compared]) {
  console.log(`${name.padEnd(20)} ${value.toFixed(2)}  (rounds ${spread(each, 2)}, p25–p75 ${quantile(each, 0.25).toFixed(2)}–${quantile(each, 0.75).toFixed(2)})`);
}
console.log('');
for (const { name, value } of [...targets, ...compared]) console.log(`RESULT ${name}=${value.toFixed(2)}`);
for (const server of servers) console.log(`RESULT cpu_us_per_msg_${server.spec.name}=${fixed(cpuOf(server.spec.name))}`);
for (const server of servers) console.log(`RESULT p99_ms_${server.spec.name}=${fixed(median(series(server.spec.name, (r) => r.p99Ms)), 1)}`);
if (SATURATION_ROUNDS > 0) {
  for (const server of servers) console.log(`RESULT saturation_msgs_per_s_${server.spec.name}=${fixed(median(saturation.get(server.spec.name)!.map((r) => r.msgsPerSecond)))}`);
}
if (memory !== undefined) console.log(`RESULT heap_growth_mb=${fixed(memory.growth, 2)}`);
console.log('');
// Judged on the printed two-decimal value, so a line never contradicts its RESULT.
for (const { name, value, target } of targets) console.log(`TARGET ${name}=${value.toFixed(2)} (target ≤ ${target.toFixed(2)}): ${value <= target ? 'met' : 'MISSED'}`);
if (memory !== undefined) console.log(`TARGET heap_growth_mb=${fixed(memory.growth, 2)} (target ≤ 10): ${memory.growth <= 10 ? 'met' : 'MISSED'}`);
