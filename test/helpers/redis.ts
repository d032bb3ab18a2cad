import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** A redis-server of a test's own on 127.0.0.1, for tests that stop, kill or reconfigure it. */
export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops it (SIGTERM) and waits for the exit; the port stays reserved for restart(). */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory (its AOF, when on, brings the data back). */
  restart(): Promise<void>;
}

export interface RedisServerOptions {
  /** Extra arguments, such as ['--maxmemory-policy', 'allkeys-lru']. */
  readonly args?: readonly string[];
  /** Append-only file on (default off: faster). */
  readonly appendonly?: boolean;
}

/** Starts a redis-server on a free loopback port in a temp dir; resolves once it accepts connections. */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'threadline-redis-'));
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--appendonly', options.appendonly === true ? 'yes' : 'no', '--maxmemory-policy', 'noeviction',
    ...(options.args ?? []),
  ];
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const started = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          started.stdout!.off('data', onData);
          started.stdout!.resume();
          resolve();
        }
      };
      started.stdout!.on('data', onData);
      started.stderr!.resume();
      started.once('error', reject);
      started.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready: ${output.slice(-500)}`)));
    });
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  await launch();
  started.add(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { url: `redis://127.0.0.1:${port}`, port, stop, restart: launch };
}

/**
 * Stops of the servers this test file started. One afterAll, registered as the file imports
 * this module: a server started inside a test would not be stopped by an afterAll it registered.
 */
const started = new Set<() => Promise<void>>();
afterAll(async () => {
  for (const stop of [...started]) await stop();
  started.clear();
});

/** A Redis for a test file, and a fresh key prefix per call so tests never see each other's keys. */
export interface TestRedis {
  /** Set in beforeAll. */
  readonly url: string;
  prefix(): string;
}

/**
 * CI starts one redis-server for the whole run (THREADLINE_TEST_REDIS_URL); without it, the
 * file starts a server of its own. Either way each test isolates itself by its prefix.
 */
export function useRedis(): TestRedis {
  let url: string | undefined;
  beforeAll(async () => {
    url = process.env.THREADLINE_TEST_REDIS_URL ?? (await startRedisServer()).url;
  });
  return {
    get url() {
      if (url === undefined) throw new Error('useRedis().url is set in beforeAll');
      return url;
    },
    prefix: () => `tltest-${randomBytes(6).toString('hex')}`,
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
