import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StartedGateway } from '../helpers/gateway-process.js';
import { otlpAttribute, readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';
import { sharedInstanceEnv, startInstanceProcess } from '../helpers/instances.js';
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
  const started = await startInstanceProcess(name, env, cleanups);
  const file = join(started.dataDir, 'traces.jsonl');
  // An instance that ran nothing (the other took every tick, and each message runs where it lands) wrote no span.
  return { ...started, spans: () => (existsSync(file) ? readOtlpSpans(file) : []) };
}

/** How many times each delivery id among `spans`' cron.run spans ran. */
function runsById(spans: readonly OtlpSpan[]): Map<string, number> {
  const runs = new Map<string, number>();
  for (const span of spans) {
    if (span.name !== 'cron.run') continue;
    const id = otlpAttribute(span, 'delivery.id')!;
    runs.set(id, (runs.get(id) ?? 0) + 1);
  }
  return runs;
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
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups, { THREADLINE_ADMINS: '*' });
    const startedAt = Date.now();
    const a = await startInstance('a', shared);
    // The first run waits for b to start (about as long as a took, with room): both schedulers know every job by then.
    const base = Math.ceil((Date.now() + 1.5 * (Date.now() - startedAt) + 2_000) / 1000);
    for (let job = 0; job < JOBS; job++) await post(a.url, `/cron "${(base + job) % 60} * * * * *" tick ${job}`);
    // b starts while they wait: its runner finds their BullMQ schedulers in place; both instances work the ticks.
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
    const runsOf = runsById([...a.spans(), ...b.spans()]);
    expect(bUpAt, 'b started after the first run was due: only a could run it').toBeLessThan(base * 1000);
    // Every run is of a delivered tick, and each tick ran once: a tick is one BullMQ job, taken by one instance.
    expect([...runsOf.keys()].sort()).toEqual(ticks.map((tick) => tick.body.idempotency_key).sort());
    for (const [id, count] of runsOf) expect(count, id).toBe(1);
  }, 60_000);

  it('three instances, one killed with SIGKILL while the jobs are scheduled: every tick after it is delivered, and run, once', async () => {
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups, {
      THREADLINE_ADMINS: '*',
      // The smallest lease: what the killed instance held moves on within about a second.
      THREADLINE_INSTANCE_LEASE_MS: '1000',
    });
    const startedAt = Date.now();
    const a = await startInstance('a', shared);
    const ticks = 2 * JOBS;
    // b and c start once the jobs exist, together, on shared CPUs: the first tick waits for about that.
    const base = Math.ceil((Date.now() + 2.5 * (Date.now() - startedAt) + 3_000) / 1000);
    // a alone takes their turns: it stores each job and sets its BullMQ scheduler.
    for (let job = 0; job < ticks; job++) await post(a.url, `/cron "${(base + job) % 60} * * * * *" tick ${job}`);
    const answers = await receiver.waitFor(ticks, base * 1000 - Date.now());
    for (const answer of answers) expect(answer.body.text).toMatch(/^Cron job .* scheduled to origin; next run /);
    const due = answers.map((answer) => Date.parse(/next run (\S+)\.$/.exec(answer.body.text)![1]!)).sort((x, y) => x - y);
    expect(due).toEqual(Array.from({ length: ticks }, (_, job) => (base + job) * 1000));
    // Their runners find every job's scheduler at start; the three instances work the ticks.
    const [b, c] = await Promise.all([startInstance('b', shared), startInstance('c', shared)]);
    // Killed once the second tick is delivered: the ticks after it run on b and c.
    await receiver.waitFor(ticks + 2, base * 1000 + 2_000 + 15_000 - Date.now());
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await a.exited).toBe(null);
    await receiver.waitFor(ticks + ticks, base * 1000 + ticks * 1000 + 20_000 - Date.now());
    const delivered = receiver.received.filter((delivery) => delivery.body.idempotency_key.startsWith('cron:'));
    const keys = [...new Set(delivered.map((delivery) => delivery.body.idempotency_key))];
    expect(keys).toHaveLength(ticks);
    expect(new Set(delivered.map((delivery) => delivery.body.text))).toEqual(new Set(Array.from({ length: ticks }, (_, job) => `tick ${job}`)));
    for (const delivery of delivered) expect(delivery.body).toMatchObject({ chat_id: 'crons', thread_id: 't' });
    const after = keys.filter((key) => Number(key.split(':')[2]) > killedAt);
    expect(after.length, 'ticks due after the kill').toBeGreaterThanOrEqual(ticks - 4);
    for (const key of after) expect(delivered.filter((delivery) => delivery.body.idempotency_key === key), key).toHaveLength(1);

    for (const instance of [b, c]) {
      instance.child.kill('SIGTERM');
      expect(await instance.exited).toBe(0);
    }
    // The survivors ran each tick due after the kill once between them.
    const runsOf = runsById([...b.spans(), ...c.spans()]);
    for (const key of after) expect(runsOf.get(key), key).toBe(1);
  }, 120_000);
});
