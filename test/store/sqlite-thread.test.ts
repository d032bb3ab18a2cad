import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { SqliteThread } from '../../src/store/sqlite-thread.js';
import { webhookOrigin } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const tempDir = useTempDir('sqlite-thread');
const RETENTION = { doneMs: 60_000, failedMs: 60_000 };
const OPEN = { destination: 'webhook:c', maxOpenPerDestination: 10, maxOpenTotal: 10 };

describe('SqliteThread', () => {
  it('commits the calls of one event-loop turn together and the next turn behind them, in order', async () => {
    const thread = await SqliteThread.start(join(tempDir(), 'order.db'), RETENTION);
    const worker = (thread as unknown as { worker: { postMessage(batch: unknown): void } }).worker;
    const posted: unknown[] = [];
    const post = worker.postMessage.bind(worker);
    worker.postMessage = (batch) => {
      posted.push(batch);
      post(batch);
    };
    const routing = JSON.stringify(webhookOrigin('c:1', 'tl_session'));
    const first = [thread.call('acceptMessage', 'm-1', routing, 'a', 1, OPEN), thread.call('pendingMessages')];
    await new Promise((resolve) => setImmediate(resolve)); // the first batch is being committed
    const second = [thread.call('acceptMessage', 'm-2', routing, 'b', 2, OPEN), thread.call('completeMessage', 'm-1'), thread.call('pendingMessages')];
    const [, seenFirst] = await Promise.all(first);
    const [, , seenSecond] = await Promise.all(second);
    expect((seenFirst as { id: string }[]).map((row) => row.id)).toEqual(['m-1']);
    expect((seenSecond as { id: string }[]).map((row) => row.id)).toEqual(['m-2']);
    // One batch a turn: each committed in one transaction.
    expect(posted.map((batch) => (batch as unknown[]).map((call) => (call as unknown[])[0]))).toEqual([
      ['acceptMessage', 'pendingMessages'],
      ['acceptMessage', 'completeMessage', 'pendingMessages'],
    ]);
    await thread.close();
  });

  it('fails every caller, then and later, with TL_STORE_FAILED when its thread dies', async () => {
    const thread = await SqliteThread.start(join(tempDir(), 'dies.db'), RETENTION);
    const owed = thread.call('pendingMessages');
    await (thread as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    for (const work of [owed, thread.call('pendingMessages')]) {
      const error = await work.then(() => undefined, (thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(ThreadlineError);
      expect((error as ThreadlineError).code).toBe('TL_STORE_FAILED');
      expect((error as ThreadlineError).message).toMatch(/dies\.db stopped .*restart the gateway/);
    }
    await expect(thread.close()).rejects.toThrow(/dies\.db stopped/);
  });

  async function runFixture(mode: 'idle' | 'writes', path: string): Promise<{ code: number | null; stdout: string }> {
    const routing = JSON.stringify(webhookOrigin('c:1', 'tl_session'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/store/sqlite-thread.fixture.ts', path, mode, routing], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, stdout: stdout.trim() };
  }

  it('keeps the process alive for every answer it owes, even after being idle, and no longer', async () => {
    const path = join(tempDir(), 'process.db');
    expect(await runFixture('writes', path)).toEqual({ code: 0, stdout: 'pending 1' });
    const store = await SqliteStore.open(path);
    expect((await store.messages.pending()).map((message) => message.text)).toEqual(['kept']);
    await store.close();
  }, 20_000);

  it('does not keep the process alive when opened and never used', async () => {
    expect(await runFixture('idle', join(tempDir(), 'idle.db'))).toEqual({ code: 0, stdout: 'opened' });
  }, 20_000);
});
