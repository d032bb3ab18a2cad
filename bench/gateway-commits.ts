/**
 * `npm run bench:commits` — how many store commits a message costs, and what each held:
 * threadline (telemetry off) at bench:gateway's fixed offered load, with its connection's
 * commits counted (bench/gateway/commit-counter.ts, preloaded). Counts cover whole rounds,
 * warm-up and drain included (every message's accept, reply and records), divided by the
 * round's messages; the claim loop's and the gauges' own commits are in them too. Prints
 * `RESULT commits_per_msg` and the transactions by the operations they held. Its counting
 * costs CPU of its own, so CPU figures come from bench:gateway, never from here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { measureAtFixedLoad, type FixedLoad } from './gateway/fixed-load.js';
import { benchServers, startServer, stopServer, type RunningServer } from './gateway/servers.js';
import { startSink } from './gateway/sink-process.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_ROUNDS', 3);
const LOAD: FixedLoad = { rate: env('BENCH_RATE', 800), warmupSeconds: env('BENCH_WARMUP_SECONDS', 2), windowSeconds: env('BENCH_SECONDS', 10) };
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';

interface Counts {
  /** How many times the server was asked: each answer is a new file. */
  readonly asked: number;
  readonly commits: number;
  readonly calls: number;
  readonly shapes: Record<string, number>;
}

let asked = 0;
async function countsOf(server: RunningServer): Promise<Counts> {
  const path = join(server.dataDir, 'commit-counts.json');
  asked++;
  server.child.kill('SIGUSR2');
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    try {
      const counts = JSON.parse(readFileSync(path, 'utf8')) as Counts;
      if (counts.asked === asked) return counts;
    } catch {
      // Not written yet, or being written.
    }
  }
}

const sink = await startSink();
const spec = benchServers({ deliveryUrl: `${sink.url}/deliveries`, dist: DIST }).find((s) => s.name === 'off')!;
const server = await startServer(spec, ['--import', 'tsx', '--import', './bench/gateway/commit-counter.ts']);
// Unmeasured: as bench:gateway warms its servers up.
await measureAtFixedLoad(server, sink, { ...LOAD, warmupSeconds: 0, windowSeconds: 3 });

const perMessage: number[] = [];
const callsPerMessage: number[] = [];
const shapes = new Map<string, number>();
let messages = 0;
for (let round = 0; round < ROUNDS; round++) {
  const before = await countsOf(server);
  const result = await measureAtFixedLoad(server, sink, LOAD);
  // Replies reached the sink; their records as done commit just after.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const after = await countsOf(server);
  perMessage.push((after.commits - before.commits) / result.allMessages);
  callsPerMessage.push((after.calls - before.calls) / result.allMessages);
  messages += result.allMessages;
  for (const [shape, n] of Object.entries(after.shapes)) shapes.set(shape, (shapes.get(shape) ?? 0) + n - (before.shapes[shape] ?? 0));
  console.error(`round ${round + 1}/${ROUNDS}: ${perMessage.at(-1)!.toFixed(2)} commits a message, ${result.allMessages} messages`);
}
await stopServer(server);
sink.stop();

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`\ntransactions a message by what they held (${ROUNDS} rounds at ${LOAD.rate} msg/s, ${DIST})`);
for (const [shape, n] of [...shapes].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]).slice(0, 15)) {
  console.log(`${(n / messages).toFixed(3).padStart(7)}  ${shape.length > 110 ? `${shape.slice(0, 110)}…` : shape}`);
}
console.log('');
console.log(`RESULT commits_per_msg=${median(perMessage).toFixed(2)}`);
console.log(`RESULT store_calls_per_msg=${median(callsPerMessage).toFixed(2)}`);
