import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('doctor-redis');
const clients: Redis[] = [];
afterAll(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

async function doctor(env: NodeJS.ProcessEnv, options: { color?: boolean } = {}) {
  let out = '';
  let err = '';
  const io = {
    out: (text: string) => void (out += text),
    err: (text: string) => void (err += text),
    env: { THREADLINE_DATA_DIR: mkdtempSync(join(tempRoot(), 'data-')), OTEL_TRACES_EXPORTER: 'none', ...env },
    ...(options.color ? { color: true } : {}),
  };
  const code = await runThreadline(['doctor'], io);
  return { code, out, err, lines: out.trimEnd().split('\n') };
}

const redisLines = (lines: string[]) => lines.filter((line) => /^. redis[ :]/.test(line));
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('threadline doctor with THREADLINE_REDIS_URL', () => {
  const shared = useRedis();

  it('checks nothing of Redis when it is unset', async () => {
    const { code, lines } = await doctor({});
    expect(code).toBe(0);
    expect(redisLines(lines)).toEqual([]);
  });

  it('passes a suitable Redis, saying what it found, and writes nothing there', async () => {
    const server = await startRedisServer({ appendonly: true });
    const prefix = shared.prefix();
    const { code, lines, err } = await doctor({ THREADLINE_REDIS_URL: server.url, THREADLINE_REDIS_PREFIX: prefix });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(redisLines(lines)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^✓ redis ${escape(server.url)}: reachable, Redis \\d+\\.\\d+\\.\\d+, maxmemory-policy noeviction, AOF on, under prefix ${prefix}$`,
        ),
      ),
    ]);
    const client = new Redis(server.url);
    clients.push(client);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('warns, and still passes, when the append-only file is off', async () => {
    const server = await startRedisServer({ appendonly: false });
    const { code, lines } = await doctor({ THREADLINE_REDIS_URL: server.url, THREADLINE_REDIS_PREFIX: shared.prefix() });
    expect(code).toBe(0);
    expect(redisLines(lines)).toEqual([
      expect.stringMatching(/^✓ redis .*AOF off, under prefix/),
      expect.stringMatching(/^! redis: the append-only file is off: .*appendonly yes/),
    ]);
  });

  it('fails on an evicting Redis, naming the fix', async () => {
    const server = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'], appendonly: true });
    const { code, lines, err } = await doctor({ THREADLINE_REDIS_URL: server.url, THREADLINE_REDIS_PREFIX: shared.prefix() });
    expect(code).toBe(1);
    expect(redisLines(lines)).toEqual([
      expect.stringMatching(/^✗ redis .*: reachable, .*maxmemory-policy allkeys-lru, AOF on/),
      expect.stringMatching(/^✗ redis: maxmemory-policy is allkeys-lru: .*CONFIG SET maxmemory-policy noeviction.*\[TL_REDIS_UNSUITABLE\]$/),
    ]);
    expect(err).toBe('threadline: 2 checks failed\n');
  });

  it('names the partition count an earlier version left, whose queues a start moves into mailboxes', async () => {
    const client = new Redis(shared.url);
    clients.push(client);
    const prefix = shared.prefix();
    await client.set(new RedisKeys(prefix).partitions, '8');
    const { code, lines } = await doctor({ THREADLINE_REDIS_URL: shared.url, THREADLINE_REDIS_PREFIX: prefix });
    expect(code).toBe(0);
    expect(lines).toContainEqual(expect.stringMatching(/^✓ redis .*under prefix .*; an earlier version's 8 partitions are moved into mailboxes at start$/));
  });

  it('fails when Redis cannot be reached, without showing the password', async () => {
    const port = await closedPort();
    const { code, out, err, lines } = await doctor({ THREADLINE_REDIS_URL: `redis://:hunter2@127.0.0.1:${port}/0` });
    expect(code).toBe(1);
    expect(redisLines(lines)).toEqual([
      `✗ redis redis://:***@127.0.0.1:${port}/0: Cannot reach Redis at redis://:***@127.0.0.1:${port}/0 (ECONNREFUSED): start it, or fix THREADLINE_REDIS_URL [TL_REDIS_UNAVAILABLE]`,
    ]);
    expect(out + err).not.toContain('hunter2');
  });

  it('does not try a Redis whose settings are refused', async () => {
    const { code, out, lines } = await doctor({ THREADLINE_REDIS_URL: 'http://:hunter2@127.0.0.1:1' });
    expect(code).toBe(1);
    expect(redisLines(lines)).toEqual(['✗ redis not checked: the Redis settings are invalid']);
    expect(out).not.toContain('hunter2');
  });

  it('colours a warning yellow on a terminal', async () => {
    const server = await startRedisServer({ appendonly: false });
    const { out } = await doctor({ THREADLINE_REDIS_URL: server.url, THREADLINE_REDIS_PREFIX: shared.prefix() }, { color: true });
    expect(out).toContain('\u001b[33m!\u001b[39m redis: the append-only file is off');
  });
});
