import { createServer, type Server, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { connectRedis, redactRedisUrl, redisFailure } from '../../../src/store/redis/redis-connection.js';
import { startRedisServer, useRedis } from '../../helpers/redis.js';

const clients: Redis[] = [];
const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.disconnect();
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function connected(url: string, options?: Parameters<typeof connectRedis>[1]): Promise<Redis> {
  const client = await connectRedis(url, options);
  clients.push(client);
  return client;
}

/** A loopback server that accepts connections and never answers (a Redis that hangs), and how many of them are still open. */
async function silentServer(): Promise<{ port: number; open: () => number }> {
  let open = 0;
  const server = createServer((socket) => {
    sockets.push(socket);
    open += 1;
    // Read and ignored, so the client's end of the connection is seen.
    socket.resume();
    socket.once('close', () => void (open -= 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { port: (server.address() as { port: number }).port, open: () => open };
}

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
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

describe('connectRedis', () => {
  const redis = useRedis();

  it('returns a client that answers, whose commands give up after a few retries', async () => {
    const client = await connected(redis.url);
    expect(await client.ping()).toBe('PONG');
    expect(client.options.maxRetriesPerRequest).toBe(2);
  });

  it('gives BullMQ a client whose commands never give up', async () => {
    const client = await connected(redis.url, { forQueues: true });
    expect(await client.ping()).toBe('PONG');
    expect(client.options.maxRetriesPerRequest).toBeNull();
  });

  it('refuses a closed port at once, naming the URL with its password masked', async () => {
    const port = await closedPort();
    const error = await refusal(connectRedis(`redis://:hunter2@127.0.0.1:${port}/2`));
    expect(error.code).toBe('TL_REDIS_UNAVAILABLE');
    expect(error.message).toBe(
      `Cannot reach Redis at redis://:***@127.0.0.1:${port}/2 (ECONNREFUSED): start it, or fix THREADLINE_REDIS_URL`,
    );
    expect(JSON.stringify({ message: error.message, stack: error.stack })).not.toContain('hunter2');
  });

  it('gives up on a server that accepts and never answers, after the connect timeout, and hangs up', async () => {
    const { port, open } = await silentServer();
    const error = await refusal(connectRedis(`redis://user:hunter2@127.0.0.1:${port}`, { connectTimeoutMs: 200 }));
    expect(error.code).toBe('TL_REDIS_UNAVAILABLE');
    expect(error.message).toMatch(new RegExp(`^Cannot reach Redis at redis://user:\\*\\*\\*@127\\.0\\.0\\.1:${port} \\(ETIMEDOUT`));
    expect(error.message).not.toContain('hunter2');
    // The half-open client is closed, not left to retry: the server sees its connection end.
    await expect.poll(open, { timeout: 5_000 }).toBe(0);
  });

  it('refuses a wrong password without showing it, and closes the half-open client', async () => {
    const server = await startRedisServer({ args: ['--requirepass', 'the-right-one'] });
    const url = `redis://:wrong-guess@127.0.0.1:${server.port}`;
    const error = await refusal(connectRedis(url));
    expect(error.code).toBe('TL_REDIS_UNAVAILABLE');
    expect(error.message).toMatch(/WRONGPASS|invalid password/i);
    expect(error.message).not.toMatch(/wrong-guess|the-right-one/);
    // Closed: the server sees no client left but the one asking.
    const admin = await connected(`redis://:the-right-one@127.0.0.1:${server.port}`);
    const list = await admin.client('LIST');
    expect(String(list).trim().split('\n')).toHaveLength(1);
  });

  it('fails commands while Redis is down, reports it, and reconnects by itself when it is back', async () => {
    const server = await startRedisServer();
    const reported: ThreadlineError[] = [];
    const client = await connected(server.url, { onError: (error) => reported.push(error) });
    await client.set('k', 'v');
    await server.stop();
    const failure = redisFailure(await client.get('k').then(() => undefined, (error: unknown) => error));
    expect(failure.code).toBe('TL_REDIS_UNAVAILABLE');
    expect(failure.statusCode).toBe(503);
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.every((error) => error.code === 'TL_REDIS_UNAVAILABLE')).toBe(true);
    await server.restart();
    // Redis without AOF comes back empty: the point is that the same client answers again.
    await expect(client.ping()).resolves.toBe('PONG');
  });
});

describe('redisFailure', () => {
  it('keeps a ThreadlineError as it is, and wraps anything else with its cause', () => {
    const own = new ThreadlineError('TL_STORE_FAILED', 'closed');
    expect(redisFailure(own)).toBe(own);
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6391'), { code: 'ECONNREFUSED' });
    const failure = redisFailure(cause);
    expect(failure.code).toBe('TL_REDIS_UNAVAILABLE');
    expect(failure.message).toBe('Redis failed a command (ECONNREFUSED): check that it is running and reachable');
    expect(failure.cause).toBe(cause);
  });

  it('masks a URL an error message quotes', () => {
    const failure = redisFailure(new Error('cannot parse redis://:hunter2@example.com:6379'));
    expect(failure.message).not.toContain('hunter2');
  });
});

describe('redactRedisUrl', () => {
  it.each([
    ['redis://:hunter2@cache.internal:6380/3', 'redis://:***@cache.internal:6380/3'],
    ['rediss://app:hunter2@cache.internal', 'rediss://app:***@cache.internal:6379'],
    ['redis://app@cache.internal:6379/', 'redis://app@cache.internal:6379'],
    ['redis://127.0.0.1:6391?password=hunter2', 'redis://127.0.0.1:6391'],
    ['redis://cache.internal', 'redis://cache.internal:6379'],
    ['hunter2 is not a URL', '(an unparsable Redis URL)'],
  ])('%s → %s', (url, shown) => {
    expect(redactRedisUrl(url)).toBe(shown);
  });
});
