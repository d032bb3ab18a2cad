import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { connectRedis } from '../../../src/store/redis/redis-connection.js';
import { RedisKeys } from '../../../src/store/redis/redis-keys.js';
import { assertRedisSuitable, checkRedis } from '../../../src/store/redis/redis-requirements.js';
import { startRedisServer, useRedis } from '../../helpers/redis.js';

const clients: Redis[] = [];
afterAll(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

async function client(url: string): Promise<Redis> {
  const redis = await connectRedis(url);
  clients.push(redis);
  return redis;
}

/** The ThreadlineError `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<ThreadlineError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ThreadlineError);
  return error as ThreadlineError;
}

/** A stand-in answering INFO with `fields` (on top of a suitable Redis's), for what no local redis-server can be. */
function reporting(fields: Record<string, string>): Redis {
  const all: Record<string, string> = { redis_version: '7.0.15', redis_mode: 'standalone', maxmemory_policy: 'noeviction', aof_enabled: '1', ...fields };
  const info = Object.entries(all).map(([name, value]) => `${name}:${value}`).join('\r\n');
  return { info: async () => `# Section\r\n${info}\r\n`, get: async () => null, set: async () => 'OK' } as unknown as Redis;
}

describe('checkRedis', () => {
  const shared = useRedis();

  it('finds nothing wrong with a noeviction Redis, and warns when its append-only file is off', async () => {
    const redis = await client((await startRedisServer({ appendonly: false })).url);
    const result = await checkRedis(redis, { keys: new RedisKeys(shared.prefix()) });
    expect(result.problems).toEqual([]);
    expect(result.warnings).toEqual([
      'the append-only file is off: a Redis restart loses what it accepted since its last snapshot. Run CONFIG SET appendonly yes, and set appendonly yes in redis.conf.',
    ]);
  });

  it('has no warning for a Redis with its append-only file on', async () => {
    const redis = await client((await startRedisServer({ appendonly: true })).url);
    expect(await checkRedis(redis, { keys: new RedisKeys(shared.prefix()) })).toMatchObject({ problems: [], warnings: [] });
  });

  it('finds an evicting Redis a problem, saying how to fix it', async () => {
    const redis = await client((await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] })).url);
    const { problems } = await checkRedis(redis, { keys: new RedisKeys(shared.prefix()) });
    expect(problems).toEqual([expect.stringMatching(/^maxmemory-policy is allkeys-lru: .*drop accepted messages.*CONFIG SET maxmemory-policy noeviction.*redis\.conf/)]);
  });

  it('finds a Redis older than 6.2, and a cluster, a problem', async () => {
    const keys = new RedisKeys('p');
    expect((await checkRedis(reporting({ redis_version: '6.0.16' }), { keys })).problems).toEqual([
      'Redis 6.0.16 is older than 6.2, which BullMQ needs: upgrade it.',
    ]);
    expect((await checkRedis(reporting({ redis_version: '6.2.0' }), { keys })).problems).toEqual([]);
    expect((await checkRedis(reporting({ redis_version: '10.0.1' }), { keys })).problems).toEqual([]);
    expect((await checkRedis(reporting({ redis_mode: 'cluster' }), { keys })).problems).toEqual([
      expect.stringMatching(/^Redis runs as a cluster, which threadline does not support yet/),
    ]);
  });

  it('warns when INFO leaves out the version or the policy, as some managed services do', async () => {
    const redis = { info: async () => '# Server\r\n', get: async () => null } as unknown as Redis;
    const { problems, warnings } = await checkRedis(redis, { keys: new RedisKeys('p') });
    expect(problems).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/did not report its version/), expect.stringMatching(/did not report its maxmemory-policy/)]);
  });

  it('reports the partition count an earlier version recorded, and finds no problem in it', async () => {
    const redis = await client(shared.url);
    const keys = new RedisKeys(shared.prefix());
    await redis.set(keys.partitions, '8');
    const { problems, facts } = await checkRedis(redis, { keys });
    expect(problems).toEqual([]);
    expect(facts.storedPartitions).toBe('8');
  });

  it('turns a Redis that went away into TL_REDIS_UNAVAILABLE', async () => {
    const server = await startRedisServer();
    const redis = await client(server.url);
    await server.stop();
    const error = await refusal(checkRedis(redis, { keys: new RedisKeys('p') }));
    expect(error.code).toBe('TL_REDIS_UNAVAILABLE');
  });
});

describe('assertRedisSuitable', () => {
  const shared = useRedis();

  it('records nothing: no partition count any more', async () => {
    const redis = await client(shared.url);
    const keys = new RedisKeys(shared.prefix());
    await assertRedisSuitable(redis, { keys });
    expect(await redis.get(keys.partitions)).toBeNull();
  });

  it('returns the warnings for the caller to log', async () => {
    const redis = await client((await startRedisServer({ appendonly: false })).url);
    const { warnings } = await assertRedisSuitable(redis, { keys: new RedisKeys(shared.prefix()) });
    expect(warnings).toEqual([expect.stringMatching(/^the append-only file is off/)]);
  });

  it('refuses an evicting Redis, naming the fix, and records nothing there', async () => {
    const redis = await client((await startRedisServer({ args: ['--maxmemory-policy', 'volatile-lru'] })).url);
    const keys = new RedisKeys(shared.prefix());
    const error = await refusal(assertRedisSuitable(redis, { keys }));
    expect(error.code).toBe('TL_REDIS_UNSUITABLE');
    expect(error.message).toMatch(/^The Redis at THREADLINE_REDIS_URL cannot hold threadline's work: maxmemory-policy is volatile-lru: .*CONFIG SET maxmemory-policy noeviction/);
    expect(await redis.get(keys.partitions)).toBeNull();
  });

  it('names every problem at once', async () => {
    const error = await refusal(assertRedisSuitable(reporting({ redis_version: '5.0.7', maxmemory_policy: 'allkeys-random' }), { keys: new RedisKeys('p') }));
    expect(error.message).toMatch(/: \(1\) Redis 5\.0\.7 is older than 6\.2.* \(2\) maxmemory-policy is allkeys-random/);
  });

});
