import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InstanceHeartbeat } from '../../src/queue/instance-heartbeat.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { DeliveryReceiver, TEST_SECRETS, type ReceivedDelivery } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import type { StartedGateway } from '../helpers/gateway-process.js';
import { sharedInstanceEnv, startInstanceProcess } from '../helpers/instances.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const redis = useRedis();
const silent = pino({ level: 'silent' });

function connect(): Redis {
  const client = new Redis(redis.url);
  cleanups.push(() => void client.disconnect());
  return client;
}

function heartbeat(client: Redis, keys: RedisKeys, instanceId: string, leaseMs: number, now?: () => number): InstanceHeartbeat {
  const beat = new InstanceHeartbeat({ redis: client, keys, instanceId, leaseMs, logger: silent, ...(now === undefined ? {} : { now }) });
  cleanups.push(() => beat.stop());
  return beat;
}

describe("an instance's heartbeat in Redis", () => {
  it('is set with its lease at start and renewed within it; another id is not alive', async () => {
    const client = connect();
    const keys = new RedisKeys(redis.prefix());
    const beat = heartbeat(client, keys, 'a', 600);
    await beat.start();
    expect(await beat.isAlive('a')).toBe(true);
    expect(await beat.isAlive('b')).toBe(false);
    const first = await client.pttl(keys.key('instance', 'a'));
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(600);
    // A renewal sets the lease afresh: once it has run down, the time left goes back up.
    const left = (): Promise<number> => client.pttl(keys.key('instance', 'a'));
    await until(async () => (await left()) < 450, 2_000);
    await until(async () => (await left()) > 500, 2_000);
  });

  it('a stop does not delete it (a restart within the lease adopts its own commands); it expires with its lease', async () => {
    const client = connect();
    const keys = new RedisKeys(redis.prefix());
    const [a, b] = [heartbeat(client, keys, 'a', 300), heartbeat(client, keys, 'b', 300)];
    await a.start();
    await a.stop();
    expect(await b.isAlive('a')).toBe(true);
    await until(async () => !(await b.isAlive('a')), 2_000);
  });

  it('judges others only once its own beats have been steady for a whole lease', async () => {
    let now = 1_000_000;
    const beat = heartbeat(connect(), new RedisKeys(redis.prefix()), 'a', 1_500, () => now);
    expect(beat.canJudge()).toBe(false);
    await beat.start();
    expect(beat.canJudge()).toBe(false);
    now += 1_499;
    expect(beat.canJudge()).toBe(false);
    now += 1;
    expect(beat.canJudge()).toBe(true);
    await beat.stop();
    expect(beat.canJudge()).toBe(false);
  });

  it('a renewal that fails (Redis away) stops it judging others until it has been steady for a lease again', async () => {
    const server = await startRedisServer();
    const client = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    cleanups.push(() => void client.disconnect());
    const keys = new RedisKeys(redis.prefix());
    let now = 1_000_000;
    const beat = heartbeat(client, keys, 'a', 300, () => now);
    await beat.start();
    now += 300;
    expect(beat.canJudge()).toBe(true);
    await server.stop();
    await until(() => !beat.canJudge(), 3_000);
    await server.restart();
    await until(async () => (await client.exists(keys.key('instance', 'a')).catch(() => 0)) === 1, 5_000);
    expect(beat.canJudge()).toBe(false);
    now += 300;
    expect(beat.canJudge()).toBe(true);
  });

  it('a claim on a lost process is taken by one of many racing claimers', async () => {
    const keys = new RedisKeys(redis.prefix());
    const claimers = [heartbeat(connect(), keys, 'b', 1_500), heartbeat(connect(), keys, 'c', 1_500)];
    const claims = await Promise.all(Array.from({ length: 10 }, (_, index) => claimers[index % 2]!.claimLost('p12345')));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await claimers[0]!.claimLost('p67890')).toBe(true);
  });
});

async function post(url: string, body: object): Promise<void> {
  const response = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_SECRETS.webhookToken}` }, body: JSON.stringify(body) });
  await response.body?.cancel();
  expect(response.status).toBe(202);
}

/** The first delivery whose text matches, waiting for more as they come. */
async function deliveryMatching(receiver: DeliveryReceiver, pattern: RegExp, timeoutMs: number): Promise<ReceivedDelivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = receiver.received.find((delivery) => pattern.test(delivery.body.text));
    if (found !== undefined) return found;
    await receiver.waitFor(receiver.unique().size + 1, Math.max(1, deadline - Date.now()));
  }
}

async function startInstance(name: string, env: Record<string, string>): Promise<StartedGateway> {
  return startInstanceProcess(name, env, cleanups);
}

describe('two gateway processes on one Redis', () => {
  it('kill -9 of the instance running a background command: its origin chat and thread are told it was lost, once', async () => {
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups, { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*', THREADLINE_WEBHOOK_TOKEN: TEST_SECRETS.webhookToken, THREADLINE_INSTANCE_LEASE_MS: '1500' });
    // a runs the turn, so the command runs on a's host; b sends every delivery, so it is left to tell the chat.
    const [a, b] = await Promise.all([startInstance('a', { ...shared, THREADLINE_WORKERS: 'turns' }), startInstance('b', { ...shared, THREADLINE_WORKERS: 'deliveries' })]);
    // Runs until its data dir is removed after the test.
    await post(b.url, { chat_id: 'ops', thread_id: 't1', user_id: 'u1', text: '/run while [ -d "$PWD" ]; do sleep 0.2; done' });
    const started = await deliveryMatching(receiver, /^Started p[0-9a-z]{5} \(pid \d+\)/, 15_000);
    const [, id, pid] = /^Started (p[0-9a-z]{5}) \(pid (\d+)\)/.exec(started.body.text)!;
    cleanups.push(() => {
      try {
        process.kill(-Number(pid), 'SIGKILL');
      } catch {
        // Ended already.
      }
    });

    a.child.kill('SIGKILL');
    await a.exited;
    const lost = await deliveryMatching(receiver, /lost with its instance a/, 10_000);
    expect(lost.body.text).toMatch(new RegExp(`^Process ${id} was lost with its instance a, .* after it started; its final status is unknown\\n\\$ while`));
    expect(lost.body).toMatchObject({ chat_id: 'ops', thread_id: 't1' });
    expect(lost.body.idempotency_key).toBe(`proc:${id}:done`);
    expect(receiver.received.filter((delivery) => /lost with its instance/.test(delivery.body.text))).toHaveLength(1);
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  }, 30_000);
});
