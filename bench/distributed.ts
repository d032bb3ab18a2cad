/**
 * npm run bench:distributed — server CPU a message, and the time from 202 to reply, at a fixed
 * offered load, echo mode over loopback, for three set-ups side by side:
 *   1. one embedded instance (SQLite in its data dir)
 *   2. one instance on Redis (THREADLINE_REDIS_URL: state, turn queues and outbox in Redis)
 *   3. two instances on one Redis, each taking half the messages
 * Each gateway is a process of its own running the built dist as `npm start` does; each Redis
 * set-up has a redis-server of its own (127.0.0.1, a free port). The load generator (this
 * process) and the timing receiver (a process of its own) are the same for every set-up and
 * not counted. The gateways' CPU (all instances together) and Redis's are read from
 * /proc/<pid>/stat over each window; rounds interleave the set-ups, each round starting with the
 * next one, and every figure is a median over rounds.
 *
 * BENCH_QUICK=1 checks that the bench works in well under a minute; its figures mean nothing.
 */
import { cpus, loadavg } from 'node:os';
import { median } from './harness.js';
import { startConfigurations, stopConfigurations, type Configuration, type ConfigurationName } from './distributed/configurations.js';
import { cpuOf, measureRound, type Load, type Round } from './distributed/measure-round.js';
import { startReplySink } from './distributed/reply-sink-process.js';
import { measureSlowTurns, type SlowTurnsResult } from './distributed/slow-turns.js';
import { measureStartBeside, type StartBesideResult } from './distributed/start-beside.js';

const QUICK = process.env['BENCH_QUICK'] === '1';
const env = (name: string, full: number, quick: number) => Number(process.env[name] ?? (QUICK ? quick : full));
const ROUNDS = env('BENCH_ROUNDS', 3, 1);
const LOAD: Load = { rate: env('BENCH_RATE', 200, 100), warmupSeconds: env('BENCH_WARMUP_SECONDS', 2, 1), windowSeconds: env('BENCH_SECONDS', 10, 2) };
const TELEMETRY = process.env['BENCH_TELEMETRY'] !== 'off';
const REDIS_AOF = process.env['BENCH_REDIS_AOF'] !== '0';
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';
const TARGETS = { cpu_redis_vs_embedded: 1.5, cpu_2_instances_vs_1: 1.15, slow_turns_2_instances_vs_embedded: 0.6 } as const;
/** `echo`: the CPU rounds only; `slow-turns`: the slow-turn scenario only; `start`: start times only; all by default. */
const SCENARIO = process.env['BENCH_SCENARIO'] ?? 'all';
const SLOW = {
  // 4 × 63: the slow turn's slot then adds no wave, so the ideals are 4 s and 2 s, as with 256 and no slow turn.
  conversations: env('BENCH_SLOW_CONVERSATIONS', 252, 32),
  turnMs: env('BENCH_SLOW_TURN_MS', 1_000, 200),
  slowMs: env('BENCH_SLOW_SLOW_MS', 15_000, 3_000),
  concurrency: env('BENCH_SLOW_CONCURRENCY', 64, 8),
};

const rotate = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]!);
const fixed = (value: number, digits: number) => value.toFixed(digits);

const sink = await startReplySink();
const slowTurnsOptions = { deliveryUrl: `${sink.url}/deliveries`, dist: DIST, telemetry: TELEMETRY, redisAppendonly: REDIS_AOF, cpuProfileDir: process.env['BENCH_CPU_PROF_DIR'], ...SLOW };
const startOptions = { ...slowTurnsOptions, rounds: env('BENCH_START_ROUNDS', 5, 1), rate: env('BENCH_START_RATE', 100, 50) };
if (SCENARIO === 'start') {
  reportStartBeside(await measureStartBeside(startOptions));
  sink.stop();
  process.exit(0);
}
if (SCENARIO === 'slow-turns') {
  reportSlowTurns(await measureSlowTurns(sink, slowTurnsOptions));
  sink.stop();
  process.exit(0);
}
const configurations = await startConfigurations({
  deliveryUrl: `${sink.url}/deliveries`,
  dist: DIST,
  telemetry: TELEMETRY,
  redisAppendonly: REDIS_AOF,
  cpuProfileDir: process.env['BENCH_CPU_PROF_DIR'],
});

console.log(
  `node ${process.version} · ${cpus()[0]?.model ?? 'unknown CPU'} ×${cpus().length} · load average ${loadavg()[0]!.toFixed(1)} · ` +
    `${LOAD.rate} msg/s offered · ${ROUNDS} rounds of a ${LOAD.windowSeconds} s window after ${LOAD.warmupSeconds} s · ` +
    `telemetry ${TELEMETRY ? 'on (trace file)' : 'off'} · Redis AOF ${REDIS_AOF ? 'on (fsync every second)' : 'off'}${QUICK ? ' · QUICK: figures mean nothing' : ''}`,
);

// Unmeasured: JIT tiers, SQLite's files, Redis's queues and connections settle before the first round.
for (const configuration of configurations) await measureRound(configuration, sink, { rate: LOAD.rate, warmupSeconds: 0, windowSeconds: QUICK ? 1 : 3 });

const rounds = new Map<ConfigurationName, Round[]>(configurations.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const line: string[] = [];
  for (const configuration of rotate(configurations, round)) {
    const result = await measureRound(configuration, sink, LOAD);
    rounds.get(configuration.name)!.push(result);
    line.push(`${configuration.name} ${fixed(result.gatewayMs, 3)} ms (+ Redis ${fixed(result.redisMs, 3)}), p50 ${fixed(result.replyP50Ms, 1)} ms`);
  }
  console.error(`round ${round + 1}/${ROUNDS}: ${line.join(' · ')}`);
}

// Idle cost: what each set-up spends a second with no message, all idle together (workers polling, leases, timers).
// A second's pause first lets the last round's tail (trace export, job clean-up) pass; 10 ms ticks need a long window.
const idleSeconds = QUICK ? 1 : 10;
await new Promise((resolve) => setTimeout(resolve, 1000));
const idleBefore = configurations.map(cpuOf);
await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
const idle = configurations.map((configuration, i) => {
  const after = cpuOf(configuration);
  return { gatewaysMs: (after.gatewaysUs - idleBefore[i]!.gatewaysUs) / 1000 / idleSeconds, redisMs: (after.redisUs - idleBefore[i]!.redisUs) / 1000 / idleSeconds };
});

await stopConfigurations(configurations);
const slowTurns = SCENARIO === 'all' ? await measureSlowTurns(sink, slowTurnsOptions) : undefined;
const startBeside = SCENARIO === 'all' ? await measureStartBeside(startOptions) : undefined;
sink.stop();

// --- report --------------------------------------------------------------------------------

const series = (name: ConfigurationName, pick: (r: Round) => number) => rounds.get(name)!.map(pick);
const medianOf = (name: ConfigurationName, pick: (r: Round) => number) => median(series(name, pick));
const spread = (values: readonly number[], digits: number) => `${fixed(Math.min(...values), digits)}–${fixed(Math.max(...values), digits)}`;

console.log(`\nCPU a message at ${LOAD.rate} msg/s (/proc/<pid>/stat, every thread), reply latency from 202 to the receiver; medians over ${ROUNDS} rounds`);
console.log(`${'set-up'.padEnd(34)} ${'gateways ms'.padStart(11)} ${'rounds'.padEnd(12)} ${'Redis ms'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  refused`);
for (const configuration of configurations as readonly Configuration[]) {
  const { name } = configuration;
  const refused = rounds.get(name)!.reduce((sum, r) => sum + r.refused + r.failed, 0);
  console.log(
    `${configuration.label.padEnd(34)} ${fixed(medianOf(name, (r) => r.gatewayMs), 3).padStart(11)} ${spread(series(name, (r) => r.gatewayMs), 3).padEnd(12)} ` +
      `${fixed(medianOf(name, (r) => r.redisMs), 3).padStart(8)} ${fixed(medianOf(name, (r) => r.replyP50Ms), 1).padStart(7)} ${fixed(medianOf(name, (r) => r.replyP99Ms), 1).padStart(7)}  ${refused}`,
  );
}

console.log(`\nidle, ${idleSeconds} s with no message: CPU ms a second, gateways (together) + Redis`);
for (const [i, configuration] of configurations.entries()) {
  console.log(`${configuration.label.padEnd(34)} ${fixed(idle[i]!.gatewaysMs, 1).padStart(11)} + ${fixed(idle[i]!.redisMs, 1)}`);
}

const cpu = (name: ConfigurationName) => medianOf(name, (r) => r.gatewayMs);
/** Per-round ratios: the two set-ups ran moments apart, so these show the run's spread. */
const roundRatios = (a: ConfigurationName, b: ConfigurationName) => {
  const bs = series(b, (r) => r.gatewayMs);
  return series(a, (r) => r.gatewayMs).map((v, i) => v / bs[i]!);
};
const targets = [
  { name: 'cpu_redis_vs_embedded', value: Number((cpu('redis_1') / cpu('embedded')).toFixed(2)), rounds: roundRatios('redis_1', 'embedded'), target: TARGETS.cpu_redis_vs_embedded },
  { name: 'cpu_2_instances_vs_1', value: Number((cpu('redis_2') / cpu('redis_1')).toFixed(2)), rounds: roundRatios('redis_2', 'redis_1'), target: TARGETS.cpu_2_instances_vs_1 },
];
console.log('');
for (const { name, value, rounds: each } of targets) console.log(`${name.padEnd(22)} ${value.toFixed(2)}  (rounds ${spread(each, 2)})`);

const latency = (name: ConfigurationName, q: 'p50' | 'p99') => medianOf(name, (r) => (q === 'p50' ? r.replyP50Ms : r.replyP99Ms));
const results: [string, string][] = [
  ['cpu_per_message_embedded_ms', fixed(cpu('embedded'), 3)],
  ['cpu_per_message_redis_1_ms', fixed(cpu('redis_1'), 3)],
  ['cpu_per_message_redis_2_ms', fixed(cpu('redis_2'), 3)],
  ['redis_server_cpu_per_message_ms', fixed(medianOf('redis_1', (r) => r.redisMs), 3)],
  ['redis_server_cpu_per_message_ms_2_instances', fixed(medianOf('redis_2', (r) => r.redisMs), 3)],
  ...targets.map(({ name, value }): [string, string] => [name, value.toFixed(2)]),
  ['reply_latency_p50_ms_embedded', fixed(latency('embedded', 'p50'), 1)],
  ['reply_latency_p50_ms_redis', fixed(latency('redis_1', 'p50'), 1)],
  ['reply_latency_p50_ms_redis_2', fixed(latency('redis_2', 'p50'), 1)],
  ['reply_latency_p99_ms_embedded', fixed(latency('embedded', 'p99'), 1)],
  ['reply_latency_p99_ms_redis', fixed(latency('redis_1', 'p99'), 1)],
  ['reply_latency_p99_ms_redis_2', fixed(latency('redis_2', 'p99'), 1)],
  ...configurations.map((c, i): [string, string] => [`idle_cpu_ms_per_s_${c.name}`, fixed(idle[i]!.gatewaysMs + idle[i]!.redisMs, 1)]),
  // The queue hop: what one instance on Redis adds to the embedded path's 202-to-reply time.
  ['queue_hop_p50_ms', fixed(latency('redis_1', 'p50') - latency('embedded', 'p50'), 1)],
  ['queue_hop_p99_ms', fixed(latency('redis_1', 'p99') - latency('embedded', 'p99'), 1)],
];
console.log('');
for (const [name, value] of results) console.log(`RESULT ${name}=${value}`);
console.log('');
// Judged on the printed two-decimal value, so a line never contradicts its RESULT.
for (const { name, value, target } of targets) console.log(`TARGET ${name}=${value.toFixed(2)} (target ≤ ${target.toFixed(2)}): ${value <= target ? 'met' : 'MISSED'}`);
if (slowTurns !== undefined) reportSlowTurns(slowTurns);
if (startBeside !== undefined) reportStartBeside(startBeside);

/** Spawn to ready, joining a busy instance and starting a cluster of its own beside it: medians, their ratio, each round's figures. */
function reportStartBeside(result: StartBesideResult): void {
  const alone = median(result.aloneMs);
  const beside = median(result.besideMs);
  console.log(
    `\nstart to ready, beside an instance taking ${startOptions.rate} msg/s: a cluster of its own ${result.aloneMs.map((ms) => ms.toFixed(0)).join(' / ')} ms; joining it ${result.besideMs.map((ms) => ms.toFixed(0)).join(' / ')} ms`,
  );
  console.log(`RESULT start_to_ready_ms_alone=${alone.toFixed(0)}`);
  console.log(`RESULT start_to_ready_ms_joining=${beside.toFixed(0)}`);
  const ratio = Number((beside / alone).toFixed(2));
  console.log(`RESULT start_joining_vs_alone=${ratio.toFixed(2)}`);
  console.log(`TARGET start_joining_vs_alone=${ratio.toFixed(2)} (target ≤ 1.00): ${ratio <= 1 ? 'met' : 'MISSED'}`);
}

/** The slow-turn scenario's RESULT lines and its TARGET: two instances within 0.6× the embedded makespan, none held. */
function reportSlowTurns(results: readonly SlowTurnsResult[]): void {
  const of = (name: SlowTurnsResult['name']) => results.find((result) => result.name === name)!;
  console.log(
    `\nslow turns: ${SLOW.conversations} conversations, turns of ${SLOW.turnMs} ms, one of ${SLOW.slowMs} ms posted first, THREADLINE_CONCURRENCY ${SLOW.concurrency} an instance`,
  );
  for (const result of results) {
    console.log(`RESULT slow_turns_makespan_ms_${result.name}=${result.makespanMs.toFixed(0)}`);
    console.log(`RESULT slow_turns_ideal_ms_${result.name}=${result.idealMs.toFixed(0)}`);
    console.log(`RESULT held_behind_slow_${result.name}=${result.heldBehindSlow}`);
    console.log(`RESULT slow_turns_gateway_cpu_ms_a_turn_${result.name}=${result.gatewayCpuMsATurn.toFixed(2)}`);
    if (result.name !== 'embedded') console.log(`RESULT slow_turns_redis_cpu_ms_a_turn_${result.name}=${result.redisCpuMsATurn.toFixed(2)}`);
    if (result.name !== 'embedded') console.log(`RESULT slow_turns_redis_commands_a_turn_${result.name}=${result.redisCommandsATurn.toFixed(1)}`);
    console.log(`RESULT slow_turns_model_cpu_ms_a_turn_${result.name}=${result.modelCpuMsATurn.toFixed(2)}`);
  }
  const ratio = Number((of('redis_2').makespanMs / of('embedded').makespanMs).toFixed(2));
  console.log(`RESULT slow_turns_2_instances_vs_embedded=${ratio.toFixed(2)}`);
  const target = TARGETS.slow_turns_2_instances_vs_embedded;
  const held = results.reduce((sum, result) => sum + result.heldBehindSlow, 0);
  console.log(`TARGET slow_turns_2_instances_vs_embedded=${ratio.toFixed(2)} (target ≤ ${target.toFixed(2)}): ${ratio <= target ? 'met' : 'MISSED'}`);
  console.log(`TARGET held_behind_slow=${held} (target 0): ${held === 0 ? 'met' : 'MISSED'}`);
}
