/**
 * A redis-server of the bench's own on 127.0.0.1 (a free port, a temp dir): the process whose
 * CPU the bench reads from /proc, so it must be a child of ours, not a shared server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running redis-server: its URL for THREADLINE_REDIS_URL and its pid for /proc. */
export interface BenchRedis {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface BenchRedisOptions {
  /** The append-only file, fsync every second as a deployment has it; off spares the disk's noise. */
  readonly appendonly: boolean;
}

/** Servers still running; killed if the bench ends early, so none outlives it holding its port. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts redis-server (from PATH); resolves once it accepts connections. */
export async function startBenchRedis(options: BenchRedisOptions): Promise<BenchRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--appendonly', options.appendonly ? 'yes' : 'no', '--appendfsync', 'everysec',
    // As threadline requires: a full Redis refuses writes rather than dropping accepted work.
    '--maxmemory-policy', 'noeviction',
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('error', (error) => reject(new Error(`cannot run redis-server (${error.message}): install it (Debian: apt-get install redis-server)`)));
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready: ${output.slice(-500)}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
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
