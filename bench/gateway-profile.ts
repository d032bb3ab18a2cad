/**
 * Where telemetry's CPU a message goes: threadline under the gateway bench's fixed load,
 * three ways, each under `node --cpu-prof`: telemetry off; the SDK on with nothing recorded
 * (OTEL_TRACES_SAMPLER=always_off); telemetry on as `npm start` has it (spans to the trace
 * file). Prints each one's server CPU a message, then the event loop's self time a message by
 * area and by function, sorted by what recording spans adds (on − nothing recorded). Only
 * samples inside the measured windows count, so start-up and shutdown stay out.
 * Run with `node --import tsx bench/gateway-profile.ts` after `npm run build`.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median } from './harness.js';
import { sumProfile, type ProfileSums, type SelfTime } from './gateway/cpu-profile.js';
import { measureAtFixedLoad, type FixedLoad, type FixedLoadRound } from './gateway/fixed-load.js';
import { benchServers, root, startServer, stopServer, type RunningServer, type ServerSpec } from './gateway/servers.js';
import { startSink } from './gateway/sink-process.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_ROUNDS', 3);
const LOAD: FixedLoad = { rate: env('BENCH_RATE', 800), warmupSeconds: env('BENCH_WARMUP_SECONDS', 2), windowSeconds: env('BENCH_SECONDS', 10) };
const TOP = env('BENCH_TOP', 30);
const CALLERS = env('BENCH_CALLERS', 12);
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';
const SORT_BY_OFF = process.env['BENCH_SORT'] === 'off';

const sink = await startSink();
const threadline = benchServers({ deliveryUrl: `${sink.url}/deliveries`, dist: DIST });
const off = threadline.find((s) => s.name === 'off')!;
const on = threadline.find((s) => s.name === 'on')!;
const variants: ServerSpec[] = [
  off,
  { ...on, name: 'unrecorded', label: 'threadline, SDK on, nothing recorded', env: { ...on.env, OTEL_TRACES_SAMPLER: 'always_off' } },
  on,
];
const profileDir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
const servers: RunningServer[] = [];
for (const spec of variants) {
  servers.push(await startServer(spec, ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, spec.name)}`, '--cpu-prof-interval=250']));
}

for (const server of servers) await measureAtFixedLoad(server, sink, { ...LOAD, warmupSeconds: 0, windowSeconds: 3 });
const rounds = new Map<string, FixedLoadRound[]>(variants.map((s) => [s.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < servers.length; k++) {
    const server = servers[(round + k) % servers.length]!;
    rounds.get(server.spec.name)!.push(await measureAtFixedLoad(server, sink, LOAD));
  }
}
for (const server of servers) await stopServer(server);
sink.stop();

const sums = new Map<string, ProfileSums>();
for (const spec of variants) {
  const dir = join(profileDir, spec.name);
  // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: the event loop is thread 0, workers write their own.
  const file = readdirSync(dir).find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (file === undefined) throw new Error(`no main-thread profile in ${dir}: ${readdirSync(dir).join(', ')}`);
  sums.set(spec.name, sumProfile(join(dir, file), rounds.get(spec.name)!.map((r) => r.windowUs), resolve(root, DIST)));
}
rmSync(profileDir, { recursive: true, force: true });

const messages = (name: string) => rounds.get(name)!.reduce((sum, r) => sum + r.messages, 0);
const perMessage = (name: string, map: (s: ProfileSums) => SelfTime, key: string) => (map(sums.get(name)!).get(key) ?? 0) / messages(name);
const us = (value: number) => value.toFixed(1).padStart(7);

console.log(`node ${process.version} · ${LOAD.rate} msg/s · ${ROUNDS} rounds of ${LOAD.windowSeconds} s · --cpu-prof at 250 µs`);
console.log(`\n${'server'.padEnd(40)} ${'CPU µs/msg'.padStart(10)} ${'event loop'.padStart(10)} ${'profiled'.padStart(9)}`);
for (const spec of variants) {
  const each = rounds.get(spec.name)!;
  console.log(
    `${spec.label.padEnd(40)} ${us(median(each.map((r) => r.cpuUs))).padStart(10)} ${us(median(each.map((r) => r.eventLoopUs))).padStart(10)} ${us(sums.get(spec.name)!.busyUs / messages(spec.name)).padStart(9)}`,
  );
}

/** Prints the rows; returns the keys in the order printed. */
function table(title: string, map: (s: ProfileSums) => SelfTime): string[] {
  const keys = new Set(variants.flatMap((spec) => [...map(sums.get(spec.name)!).keys()]));
  const rows = [...keys].map((key) => {
    const [o, u, n] = ['off', 'unrecorded', 'on'].map((name) => perMessage(name, map, key)) as [number, number, number];
    return { key, o, u, n };
  });
  // BENCH_SORT=off: what threadline itself costs, telemetry aside.
  rows.sort(SORT_BY_OFF ? (a, b) => b.o - a.o : (a, b) => b.n - b.u - (a.n - a.u));
  console.log(`\n${title}: event-loop self time, µs a message, ${SORT_BY_OFF ? 'by telemetry off' : 'by what recording adds (on − nothing recorded)'}`);
  console.log(`${'off'.padStart(7)} ${'unrec.'.padStart(7)} ${'on'.padStart(7)} ${'on−unr'.padStart(7)} ${'unr−off'.padStart(7)}  where`);
  for (const { key, o, u, n } of rows.slice(0, TOP)) console.log(`${us(o)} ${us(u)} ${us(n)} ${us(n - u)} ${us(u - o)}  ${key}`);
  return rows.map((row) => row.key);
}
table('by area', (s) => s.byArea);
const functions = table('by function', (s) => s.byFunction);

console.log(`\ntheir callers with telemetry on, µs a message (nearest first)`);
for (const key of functions.slice(0, CALLERS)) {
  console.log(`  ${key}`);
  const chains = [...(sums.get('on')!.callers.get(key) ?? new Map<string, number>()).entries()].sort((a, b) => b[1] - a[1]);
  for (const [chain, time] of chains.slice(0, 3)) console.log(`    ${us(time / messages('on'))}  ← ${chain}`);
}
