/**
 * bench:distributed's slow-turn scenario: N conversations with one message each, whose turns
 * wait `turnMs` on a fake model (a process of its own), plus one conversation whose turn waits
 * `slowMs`, posted first. One embedded instance against two instances on one Redis, each with
 * THREADLINE_CONCURRENCY `concurrency`. Reports each set-up's makespan (first post to the last
 * quick reply), the ideal (the quick turns over the set-up's slots), and how many quick
 * conversations were held behind the slow turn (answered only after it could have ended).
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { createInterface } from 'node:readline';
import { root, startServer, stopServer, type RunningServer } from '../gateway/servers.js';
import { gatewaySpec, type ConfigurationOptions } from './configurations.js';
import { startBenchRedis, type BenchRedis } from './redis-server.js';
import { cpuTime } from '../gateway/cpu-time.js';
import { cpuOf } from './measure-round.js';
import type { ReplySink } from './reply-sink-process.js';

export interface SlowTurnsOptions extends ConfigurationOptions {
  readonly conversations: number;
  readonly turnMs: number;
  readonly slowMs: number;
  readonly concurrency: number;
}

export interface SlowTurnsResult {
  readonly name: 'embedded' | 'redis_2';
  readonly makespanMs: number;
  readonly idealMs: number;
  readonly heldBehindSlow: number;
  /** CPU of the set-up's gateways from the first post to the last quick reply, over the quick turns, ms. */
  readonly gatewayCpuMsATurn: number;
  /** The same for its redis-server; 0 embedded. */
  readonly redisCpuMsATurn: number;
  /** The same for the fake model, which both set-ups share. */
  readonly modelCpuMsATurn: number;
  /** Commands Redis ran over the same span (INFO commandstats, scripts counted as one), over the quick turns; 0 embedded. */
  readonly redisCommandsATurn: number;
}

/** Calls of each command Redis has run so far (INFO commandstats). */
async function commandCounts(redis: BenchRedis | undefined): Promise<Map<string, number>> {
  if (redis === undefined) return new Map();
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  try {
    const info = await client.info('commandstats');
    return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
  } finally {
    client.disconnect();
  }
}

/** Runs the scenario on each set-up in turn, with one fake model for both. */
export async function measureSlowTurns(sink: ReplySink, options: SlowTurnsOptions): Promise<SlowTurnsResult[]> {
  const model = spawn(process.execPath, ['--import', 'tsx', 'bench/agent/fake-model-process.ts'], {
    cwd: root,
    env: { ...process.env, BENCH_MODEL_MS: String(options.turnMs), BENCH_MODEL_SLOW_MS: String(options.slowMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      createInterface({ input: model.stdout! }).once('line', resolve);
      model.once('exit', (code) => reject(new Error(`the fake model exited with ${code}`)));
    });
    const env = {
      THREADLINE_LLM_BASE_URL: baseUrl,
      THREADLINE_LLM_API_KEY: 'sk-bench-0123456789',
      THREADLINE_LLM_MODEL: 'bench',
      THREADLINE_CONCURRENCY: String(options.concurrency),
      THREADLINE_LLM_TIMEOUT_MS: String(Math.max(60_000, options.slowMs * 2)),
    };
    const results: SlowTurnsResult[] = [];
    const embedded = [await startServer(gatewaySpec('slow-embedded', options, env))];
    results.push(await run('embedded', embedded, undefined, model.pid!, sink, options));
    for (const gateway of embedded) await stopServer(gateway);

    const redis: BenchRedis = await startBenchRedis({ appendonly: options.redisAppendonly });
    const shared = { ...env, THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: 'bench-slow' };
    const two = await Promise.all([1, 2].map((i) => startServer(gatewaySpec(`slow-redis-${i}`, options, { ...shared, THREADLINE_INSTANCE_ID: `slow-${i}` }))));
    results.push(await run('redis_2', two, redis, model.pid!, sink, options));
    for (const gateway of two) await stopServer(gateway);
    await redis.stop();
    return results;
  } finally {
    model.kill('SIGTERM');
  }
}

async function run(
  name: SlowTurnsResult['name'],
  gateways: readonly RunningServer[],
  redis: BenchRedis | undefined,
  modelPid: number,
  sink: ReplySink,
  options: SlowTurnsOptions,
): Promise<SlowTurnsResult> {
  await sink.reset();
  const cpu = () => ({ ...cpuOf({ gateways, redis }), modelUs: cpuTime(modelPid).totalUs });
  const commandsBefore = await commandCounts(redis);
  const cpuBefore = cpu();
  const startedUs = Number(process.hrtime.bigint() / 1000n);
  const post = (index: number, chat: string, text: string) =>
    fetch(`${gateways[index % gateways.length]!.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: chat, text }),
    }).then(async (response) => {
      await response.body?.cancel();
      if (response.status !== 202) throw new Error(`${chat}: ${response.status}`);
    });
  await post(0, 'slow', 'slow s0');
  await Promise.all(Array.from({ length: options.conversations }, (_, i) => post(i + 1, `q${i}`, `q${i} m0`)));
  const postedMs = (Number(process.hrtime.bigint() / 1000n) - startedUs) / 1000;
  await sink.awaitDeliveries(options.conversations, options.slowMs + 120_000);
  // Read when the quick replies are in: the slow turn only waits from here on.
  const cpuAfter = cpu();
  const commandsAfter = await commandCounts(redis);
  // The two INFO calls themselves and this client's HELLO/CLIENT are not the gateways': a handful against thousands.
  const ran = [...commandsAfter].map(([name, calls]) => [name, calls - (commandsBefore.get(name) ?? 0)] as const).filter(([, calls]) => calls > 0);
  await sink.awaitDeliveries(options.conversations + 1, options.slowMs + 120_000);
  const arrivals = await sink.arrivals();
  const quick = Array.from({ length: options.conversations }, (_, i) => (arrivals.get(`you said: q${i} m0`) ?? Infinity) - startedUs);
  const slots = options.concurrency * gateways.length;
  if (process.env['BENCH_SLOW_DEBUG'] === '1') {
    const sorted = [...quick].sort((a, b) => a - b).map((us) => Math.round(us / 1000));
    if (ran.length > 0) console.error(name, 'Redis commands a quick turn:', ran.sort((a, b) => b[1] - a[1]).map(([command, calls]) => `${command} ${(calls / options.conversations).toFixed(2)}`).join(', '));
    console.error(name, `started at ${startedUs} µs (CLOCK_MONOTONIC, as --cpu-prof's), all posted at ${postedMs.toFixed(0)} ms; quick replies at (ms):`, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1].map((q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]).join(' '));
  }
  return {
    name,
    makespanMs: Math.max(...quick) / 1000,
    // The slow turn holds one slot throughout; the quick ones share the rest.
    idealMs: Math.ceil(options.conversations / (slots - 1)) * options.turnMs,
    heldBehindSlow: quick.filter((us) => us / 1000 >= options.slowMs).length,
    gatewayCpuMsATurn: (cpuAfter.gatewaysUs - cpuBefore.gatewaysUs) / 1000 / options.conversations,
    redisCpuMsATurn: (cpuAfter.redisUs - cpuBefore.redisUs) / 1000 / options.conversations,
    modelCpuMsATurn: (cpuAfter.modelUs - cpuBefore.modelUs) / 1000 / options.conversations,
    redisCommandsATurn: ran.reduce((sum, [, calls]) => sum + calls, 0) / options.conversations,
  };
}
