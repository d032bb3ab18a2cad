import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { assertRedisFsync } from '../../../src/store/redis/redis-fsync.js';
import { useTestGateways } from '../../helpers/gateway.js';
import { startRedisServer } from '../../helpers/redis.js';

const start = useTestGateways();

const clients: Redis[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

async function redisWith(appendonly: boolean, args: string[] = []): Promise<Redis> {
  const server = await startRedisServer({ appendonly, args });
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  clients.push(client);
  return client;
}

async function refusal(redis: Redis): Promise<ThreadlineError> {
  const error = await assertRedisFsync(redis, 'always').then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ThreadlineError);
  return error as ThreadlineError;
}

describe('THREADLINE_REDIS_FSYNC', () => {
  it('always: takes a Redis that fsyncs every write to its append-only file', async () => {
    await expect(assertRedisFsync(await redisWith(true, ['--appendfsync', 'always']), 'always')).resolves.toBeUndefined();
  });

  it('always: refuses appendfsync everysec, naming what it has and the fix', async () => {
    const error = await refusal(await redisWith(true, ['--appendfsync', 'everysec']));
    expect(error.code).toBe('TL_REDIS_UNSUITABLE');
    expect(error.message).toContain('this Redis has everysec');
    expect(error.message).toContain('appendfsync always');
  });

  it('always: refuses a Redis without the append-only file', async () => {
    const error = await refusal(await redisWith(false, ['--appendfsync', 'always']));
    expect(error.code).toBe('TL_REDIS_UNSUITABLE');
    expect(error.message).toContain('append-only file, which is off');
  });

  it('always: refuses a Redis that will not report appendfsync (CONFIG disabled)', async () => {
    const error = await refusal(await redisWith(true, ['--appendfsync', 'always', '--rename-command', 'CONFIG', '""']));
    expect(error.code).toBe('TL_REDIS_UNSUITABLE');
    expect(error.message).toContain('will not report');
  });

  it('server: asks Redis nothing, whatever its persistence', async () => {
    const redis = await redisWith(false);
    await expect(assertRedisFsync(redis, 'server')).resolves.toBeUndefined();
    // lazyConnect: a command would have connected it.
    expect(redis.status).toBe('wait');
  });

  it('a gateway set to always does not start on a Redis that fsyncs every second', async () => {
    const server = await startRedisServer({ appendonly: true, args: ['--appendfsync', 'everysec'] });
    const started = start({ env: { THREADLINE_REDIS_URL: server.url, THREADLINE_REDIS_FSYNC: 'always' } });
    await expect(started).rejects.toMatchObject({ code: 'TL_REDIS_UNSUITABLE', message: expect.stringContaining('appendfsync always') });
  });
});
