import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { startGatewayProcess, type StartedGateway } from '../helpers/gateway-process.js';
import { otlpAttribute, readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';
import { useRedis } from '../helpers/redis.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const redis = useRedis();

/** Cron jobs of the test, each due once a minute at its own second, a second apart. */
const JOBS = 3;

interface Instance extends StartedGateway {
  spans(): OtlpSpan[];
}

async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), `threadline-cron-${name}-`));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const started = await startGatewayProcess({ ...env, THREADLINE_DATA_DIR: dataDir, THREADLINE_INSTANCE_ID: name }, (cleanup) => cleanups.push(cleanup));
  return { ...started, spans: () => readOtlpSpans(join(dataDir, 'traces.jsonl')) };
}

async function post(url: string, text: string): Promise<void> {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: 'crons', thread_id: 't', user_id: 'u1', text }),
  });
  await response.body?.cancel();
  expect(response.status).toBe(202);
}

describe('cron jobs with several gateway instances on one Redis', () => {
  it('every tick is delivered once by id; the cron.run spans of both instances count the runs that happened', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const shared = {
      THREADLINE_REDIS_URL: redis.url,
      THREADLINE_REDIS_PREFIX: redis.prefix(),
      THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
      THREADLINE_ADMINS: '*',
    };
    const startedAt = Date.now();
    const a = await startInstance('a', shared);
    // The first run waits for b to start (about as long as a took, with room): both schedulers know every job by then.
    const base = Math.ceil((Date.now() + 1.5 * (Date.now() - startedAt) + 2_000) / 1000);
    for (let job = 0; job < JOBS; job++) await post(a.url, `/cron "${(base + job) % 60} * * * * *" tick ${job}`);
    // b starts while they wait: its scheduler reads them at start, as a's was woken by their creation; both run them.
    const b = await startInstance('b', shared);
    const bUpAt = Date.now();
    const scheduled = await receiver.waitFor(JOBS + JOBS, base * 1000 + JOBS * 1000 + 10_000 - Date.now());
    const ticks = scheduled.filter((delivery) => delivery.body.idempotency_key.startsWith('cron:'));
    expect(ticks.map((tick) => tick.body.text).sort()).toEqual(Array.from({ length: JOBS }, (_, job) => `tick ${job}`));
    for (const tick of ticks) expect(tick.body).toMatchObject({ chat_id: 'crons', thread_id: 't' });
    // Not one tick twice: the outbox records a run's delivery id once, whichever instance ran it.
    const received = receiver.received.map((delivery) => delivery.body.idempotency_key).filter((key) => key.startsWith('cron:'));
    expect(received.sort()).toEqual(ticks.map((tick) => tick.body.idempotency_key).sort());

    for (const instance of [a, b]) {
      instance.child.kill('SIGTERM');
      expect(await instance.exited).toBe(0);
    }
    const runs = [...a.spans(), ...b.spans()].filter((span) => span.name === 'cron.run');
    const runsOf = new Map<string, number>();
    for (const run of runs) {
      const id = otlpAttribute(run, 'delivery.id')!;
      runsOf.set(id, (runsOf.get(id) ?? 0) + 1);
    }
    expect(bUpAt, 'b started after the first run was due: only a could run it').toBeLessThan(base * 1000);
    // Every run is of a delivered tick, and each tick ran once: both instances' timers fire for it, one claims it.
    expect([...runsOf.keys()].sort()).toEqual(ticks.map((tick) => tick.body.idempotency_key).sort());
    for (const [id, count] of runsOf) expect(count, id).toBe(1);
  }, 60_000);
});
