/**
 * npm run bench:agent — server CPU per message of an LLM turn, beside the echo agent's, at a
 * fixed offered load over loopback. The model is a fake OpenAI-compatible endpoint in a process
 * of its own that answers after BENCH_MODEL_MS (1 s: a turn that waits on a model), so many
 * turns are in flight at once, as in production; its CPU is not counted. Three gateways, each a
 * process of its own: echo (telemetry off), LLM (telemetry off), LLM (telemetry on, trace file).
 * Rounds interleave them; figures are medians over rounds.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { median } from './harness.js';
import { measureAtFixedLoad, type FixedLoad, type FixedLoadRound } from './gateway/fixed-load.js';
import { benchServers, root, startServer, stopServer, type RunningServer, type ServerSpec } from './gateway/servers.js';
import { startSink } from './gateway/sink-process.js';

const env = (name: string, fallback: number) => Number(process.env['BENCH_' + name] ?? fallback);
const ROUNDS = env('ROUNDS', 4);
const MODEL_MS = env('MODEL_MS', 1_000);
const LOAD: FixedLoad = { rate: env('RATE', 200), warmupSeconds: env('WARMUP_SECONDS', 3), windowSeconds: env('SECONDS', 10) };
const DIST = process.env['BENCH_THREADLINE_DIST'] ?? 'dist';

const model = spawn(process.execPath, ['--import', 'tsx', 'bench/agent/fake-model-process.ts'], {
  cwd: root,
  env: { ...process.env, BENCH_MODEL_MS: String(MODEL_MS) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
process.once('exit', () => model.kill('SIGKILL'));
const baseUrl = await new Promise<string>((resolve, reject) => {
  createInterface({ input: model.stdout! }).once('line', resolve);
  model.once('exit', (code) => reject(new Error(`the fake model exited with ${code}`)));
});

const sink = await startSink();
const gateway = benchServers({ deliveryUrl: `${sink.url}/deliveries`, dist: DIST });
const off = gateway.find((s) => s.name === 'off')!;
const on = gateway.find((s) => s.name === 'on')!;
// Every turn of the window in flight at once: rate × model time, with room to spare.
const turns = { THREADLINE_CONCURRENCY: String(Math.ceil(LOAD.rate * (MODEL_MS / 1000) * 2) + 64) };
const llm = { THREADLINE_LLM_BASE_URL: baseUrl, THREADLINE_LLM_API_KEY: 'sk-bench-0123456789', THREADLINE_LLM_MODEL: 'bench', ...turns };
const specs: ServerSpec[] = [
  { ...off, name: 'echo', label: 'echo agent, telemetry off', env: { ...off.env, ...turns } },
  { ...off, name: 'llm', label: 'LLM agent, telemetry off', env: { ...off.env, ...llm } },
  { ...on, name: 'llm_on', label: 'LLM agent, telemetry on (trace file)', env: { ...on.env, ...llm } },
];
const servers: RunningServer[] = [];
for (const spec of specs) servers.push(await startServer(spec));

console.log(`node ${process.version} · ${LOAD.rate} msg/s · model answers after ${MODEL_MS} ms · ${ROUNDS} rounds of ${LOAD.windowSeconds} s`);
const rounds = new Map<string, FixedLoadRound[]>(specs.map((s) => [s.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < servers.length; k++) {
    const server = servers[(round + k) % servers.length]!;
    const measured = await measureAtFixedLoad(server, sink, LOAD);
    rounds.get(server.spec.name)!.push(measured);
    console.log(`round ${round + 1} ${server.spec.name}: ${measured.cpuUs.toFixed(0)} µs/msg, p99 ${measured.p99Ms.toFixed(1)} ms, refused ${measured.refused}`);
  }
}
for (const server of servers) await stopServer(server);
sink.stop();
model.kill('SIGTERM');

const cpu = (name: string) => median(rounds.get(name)!.map((r) => r.cpuUs));
const ratios = (a: string, b: string) => rounds.get(a)!.map((r, i) => r.cpuUs / rounds.get(b)![i]!.cpuUs);
const range = (values: readonly number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
for (const spec of specs) console.log(`RESULT cpu_us_per_msg_${spec.name}=${cpu(spec.name).toFixed(0)}`);
console.log(`RESULT cpu_llm_vs_echo=${(cpu('llm') / cpu('echo')).toFixed(2)} (rounds ${range(ratios('llm', 'echo'))})`);
console.log(`RESULT cpu_llm_on_vs_off=${(cpu('llm_on') / cpu('llm')).toFixed(2)} (rounds ${range(ratios('llm_on', 'llm'))})`);
for (const spec of specs) console.log(`RESULT p99_accept_ms_${spec.name}=${median(rounds.get(spec.name)!.map((r) => r.p99Ms)).toFixed(1)}`);
for (const spec of specs) console.log(`RESULT refused_${spec.name}=${rounds.get(spec.name)!.reduce((n, r) => n + r.refused, 0)}`);
