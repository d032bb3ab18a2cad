/**
 * npm run bench:platforms — gateway CPU a message through each platform adapter, side by side
 * in one run. Each platform's gateway is the built `dist` in a process of its own, echo agent,
 * pointed at that platform's loopback fake from threadline/testing, which runs in this process
 * (so its CPU is not counted). Closed loop: a bounded number of messages wait for their reply at
 * once; a run ends when the fake has every reply. Rounds interleave the platforms; figures are
 * medians over rounds.
 */
import { median } from './harness.js';
import { root, startServer, stopServer, threadline, type RunningServer } from './gateway/servers.js';
import { runClosedLoop, type PlatformRun } from './platforms/closed-loop.js';
import { PLATFORM_DRIVERS, type PlatformDriver } from './platforms/platform-drivers.js';

const env = (name: string, fallback: number) => Number(process.env['BENCH_' + name] ?? fallback);
const ROUNDS = env('ROUNDS', 5);
const MESSAGES = env('MESSAGES', 300);
const WARMUP = env('WARMUP', 50);
// The first rounds read up to half again as much as later ones before V8 has compiled the hot paths.
const FIRST_WARMUP = env('FIRST_WARMUP', 2_000);
const IN_FLIGHT = env('IN_FLIGHT', 16);
const TELEMETRY = process.env['BENCH_TELEMETRY'] ?? 'on';
const TYPING = process.env['BENCH_TYPING'] ?? 'on';
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';

interface Subject {
  readonly driver: PlatformDriver;
  readonly server: RunningServer;
  /** The next message's number on this gateway. */
  next: number;
  readonly runs: PlatformRun[];
}

async function startSubject(driver: PlatformDriver): Promise<Subject> {
  const server = await startServer({
    name: driver.name,
    label: `threadline with ${driver.name}`,
    args: threadline(DIST),
    env: {
      THREADLINE_LOG_LEVEL: 'warn',
      PORT: '0',
      HOST: '127.0.0.1',
      ...(TELEMETRY === 'off' ? { OTEL_SDK_DISABLED: 'true' } : {}),
      // What "typing…" costs: without it, a chat platform sends one request a message, as the webhook does.
      ...(TYPING === 'off' ? { THREADLINE_TYPING_INTERVAL_MS: '0' } : {}),
      ...driver.env,
    },
    dataDirVariable: 'THREADLINE_DATA_DIR',
  });
  await driver.ready(server.url);
  return { driver, server, next: 0, runs: [] };
}

async function run(subject: Subject, messages: number): Promise<PlatformRun> {
  const result = await runClosedLoop(subject.driver, subject.server, { messages, inFlight: IN_FLIGHT, from: subject.next, timeoutMs: 60_000 });
  subject.next += messages;
  return result;
}

console.log(
  `node ${process.version} · telemetry ${TELEMETRY} · typing ${TYPING} · ${FIRST_WARMUP} messages of warm-up, then ${ROUNDS} rounds of ${MESSAGES} messages (after ${WARMUP}) · ${IN_FLIGHT} in flight · ${root}`,
);
const subjects: Subject[] = [];
for (const start of PLATFORM_DRIVERS) subjects.push(await startSubject(await start()));
for (const subject of subjects) await run(subject, FIRST_WARMUP);

for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < subjects.length; k++) {
    const subject = subjects[(round + k) % subjects.length]!;
    await run(subject, WARMUP);
    const measured = await run(subject, MESSAGES);
    subject.runs.push(measured);
    console.log(
      `round ${round + 1} ${subject.driver.name}: ${measured.cpuUs.toFixed(0)} µs/msg (event loop ${measured.eventLoopUs.toFixed(0)}), ${measured.messagesPerSecond.toFixed(0)} msg/s`,
    );
  }
}

for (const subject of subjects) {
  await stopServer(subject.server);
  await subject.driver.close();
}
const range = (values: readonly number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
for (const { driver, runs } of subjects) {
  const cpu = runs.map((r) => r.cpuUs);
  console.log(`RESULT platform_${driver.name}_cpu_us_per_message=${median(cpu).toFixed(0)} (rounds ${range(cpu)})`);
}
// Within a round the platforms run minutes apart at most: the ratio to the webhook's round cancels the machine's drift.
const webhook = subjects.find((s) => s.driver.name === 'webhook')!;
for (const { driver, runs } of subjects.filter((s) => s !== webhook)) {
  const ratios = runs.map((r, i) => r.cpuUs / webhook.runs[i]!.cpuUs);
  console.log(`RESULT platform_${driver.name}_vs_webhook=${median(ratios).toFixed(2)} (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
}
for (const { driver, runs } of subjects) console.log(`RESULT platform_${driver.name}_event_loop_us_per_message=${median(runs.map((r) => r.eventLoopUs)).toFixed(0)}`);
for (const { driver, runs } of subjects) {
  const calls = [...runs.at(-1)!.callsPerMessage].sort(([, a], [, b]) => b - a).map(([name, count]) => `${name} ${count.toFixed(2)}`);
  console.log(`${driver.name}: calls to the fake a message (last round): ${calls.join(', ')}`);
}
for (const { driver, runs } of subjects) console.log(`RESULT platform_${driver.name}_messages_per_s=${median(runs.map((r) => r.messagesPerSecond)).toFixed(0)}`);
