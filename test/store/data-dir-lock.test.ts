import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { ThreadlineError } from '../../src/errors.js';
import { acquireDataDirLock, PID_FILE, type DataDirLock } from '../../src/store/data-dir-lock.js';
import { expectThreadlineError } from '../helpers/errors.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('data-dir-lock');
const MODULE = new URL('../../src/store/data-dir-lock.ts', import.meta.url).href;
// `hold`: takes the lock, says so, and keeps it until killed. `try`: says whether it could take it.
const CHILD = `
const { acquireDataDirLock } = await import(process.argv[1]);
const [, , dir, mode] = process.argv;
if (mode === 'hold') {
  acquireDataDirLock(dir);
  console.log('held');
  setInterval(() => {}, 60_000);
} else {
  try { acquireDataDirLock(dir).release(); console.log('acquired'); } catch (error) { console.log(error.code); }
}`;

const locks: DataDirLock[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const lock of locks.splice(0)) lock.release();
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

function acquire(dir: string): DataDirLock {
  const lock = acquireDataDirLock(dir);
  locks.push(lock);
  return lock;
}

function startChild(dir: string, mode: 'hold' | 'try'): { child: ChildProcess; firstLine: Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, MODULE, dir, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const firstLine = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before saying anything`)));
  });
  return { child, firstLine };
}

/** What refused the lock: asserts it is TL_DATA_DIR_LOCKED. */
function refusal(dir: string): ThreadlineError {
  const error = expectThreadlineError(() => acquire(dir), 'TL_DATA_DIR_LOCKED');
  expect(error.statusCode).toBe(409);
  return error;
}

describe('acquireDataDirLock', () => {
  it('refuses a second gateway in this process, naming the directory and the pid', () => {
    const dir = join(tempDir(), 'same-process');
    const lock = acquire(dir);
    expect(lock.dataDir).toBe(dir);
    expect(readFileSync(join(dir, PID_FILE), 'utf8').trim()).toBe(String(process.pid));

    // By another spelling of the same path, and at once rather than after a busy wait.
    const started = performance.now();
    const { message } = refusal(relative(process.cwd(), dir));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(message).toContain(`${dir} `);
    expect(message).toContain(`pid ${process.pid}`);
    expect(message).toContain('THREADLINE_DATA_DIR');
  });

  it('keeps the lock from other processes after a refused attempt in this process', async () => {
    const dir = join(tempDir(), 'refused-then-child');
    acquire(dir);
    refusal(dir);
    expect(await startChild(dir, 'try').firstLine).toBe('TL_DATA_DIR_LOCKED');
  });

  it('refuses while another process holds it, and takes it once that process is killed with SIGKILL', async () => {
    const dir = join(tempDir(), 'cross-process');
    const { child, firstLine } = startChild(dir, 'hold');
    expect(await firstLine).toBe('held');

    const { message } = refusal(dir);
    expect(message).toContain(dir);
    expect(message).toContain(`pid ${child.pid}`);

    child.kill('SIGKILL');
    await once(child, 'exit');
    // The OS dropped the dead process's lock; its pid file is left behind and is overwritten.
    acquire(dir);
    expect(readFileSync(join(dir, PID_FILE), 'utf8').trim()).toBe(String(process.pid));
  });

  it('says "pid unknown" when the pid file cannot be read', async () => {
    const dir = join(tempDir(), 'no-pid-file');
    const { firstLine } = startChild(dir, 'hold');
    expect(await firstLine).toBe('held');
    rmSync(join(dir, PID_FILE));

    expect(refusal(dir).message).toContain('pid unknown');
  });

  it('can be taken again after release(), which is idempotent and removes the pid file', async () => {
    const dir = join(tempDir(), 'release');
    const lock = acquire(dir);
    lock.release();
    lock.release();
    expect(existsSync(join(dir, PID_FILE))).toBe(false);

    acquire(dir);
    expect(await startChild(dir, 'try').firstLine).toBe('TL_DATA_DIR_LOCKED');
    // A late second release() of the old lock leaves the new holder's pid file alone.
    lock.release();
    expect(readFileSync(join(dir, PID_FILE), 'utf8').trim()).toBe(String(process.pid));
  });

  it('release() leaves a pid file that no longer names this process', () => {
    const dir = join(tempDir(), 'foreign-pid');
    const lock = acquire(dir);
    writeFileSync(join(dir, PID_FILE), '1\n');
    lock.release();
    expect(readFileSync(join(dir, PID_FILE), 'utf8')).toBe('1\n');
    acquire(dir).release();
  });
});
