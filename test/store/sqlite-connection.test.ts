import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { SqliteConnection } from '../../src/store/sqlite-connection.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { routingOf } from './store.fixture.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const tempDir = useTempDir('sqlite-connection');
const RETENTION = { doneMs: 60_000, failedMs: 60_000 };
const OPEN = { destination: 'webhook:c', maxOpenPerDestination: 10, maxOpenTotal: 10 };
const routing = JSON.stringify(routingOf('c:1', 'tl_session'));

/** Records the names of each batch the connection commits. */
function recordBatches(connection: SqliteConnection): string[][] {
  const committed: string[][] = [];
  const internals = connection as unknown as { runBatch: (batch: readonly (readonly [string, unknown[]])[]) => unknown[] };
  const run = internals.runBatch;
  internals.runBatch = (batch) => {
    committed.push(batch.map(([name]) => name));
    return run(batch);
  };
  return committed;
}

describe('SqliteConnection', () => {
  it('commits the calls of one event-loop turn together and the next turn behind them, in order', async () => {
    const connection = SqliteConnection.open(join(tempDir(), 'order.db'), RETENTION);
    const committed = recordBatches(connection);
    const first = [connection.call('acceptMessage', 'm-1', routing, 'a', 1, OPEN), connection.call('pendingMessages')];
    await new Promise((resolve) => setImmediate(resolve)); // the first batch is committed
    const second = [connection.call('acceptMessage', 'm-2', routing, 'b', 2, OPEN), connection.call('completeMessage', 'm-1'), connection.call('pendingMessages')];
    const [, seenFirst] = await Promise.all(first);
    const [, , seenSecond] = await Promise.all(second);
    expect((seenFirst as { id: string }[]).map((row) => row.id)).toEqual(['m-1']);
    expect((seenSecond as { id: string }[]).map((row) => row.id)).toEqual(['m-2']);
    expect(committed).toEqual([
      ['acceptMessage', 'pendingMessages'],
      ['acceptMessage', 'completeMessage', 'pendingMessages'],
    ]);
    await connection.close();
  });

  it('answers a caller only after the commit that holds its call', async () => {
    const path = join(tempDir(), 'durable.db');
    const connection = SqliteConnection.open(path, RETENTION);
    const accepted = connection.call('acceptMessage', 'm-1', routing, 'kept', 1, OPEN);
    let settled = false;
    void accepted.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false); // nothing is answered before the turn's commit
    await accepted;
    const reader = SqliteConnection.open(path, RETENTION); // a second connection sees it committed
    expect(((await reader.call('pendingMessages')) as { id: string }[]).map((row) => row.id)).toEqual(['m-1']);
    await Promise.all([reader.close(), connection.close()]);
  });

  it('commits what was asked before close, and refuses what comes after with TL_STORE_FAILED', async () => {
    const path = join(tempDir(), 'close.db');
    const connection = SqliteConnection.open(path, RETENTION);
    const accepted = connection.call('acceptMessage', 'm-1', routing, 'kept', 1, OPEN);
    await connection.close();
    await expect(accepted).resolves.toBeDefined();
    const error = await connection.call('pendingMessages').then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ThreadlineError);
    expect((error as ThreadlineError).code).toBe('TL_STORE_FAILED');
    const store = await SqliteStore.open(path);
    expect((await store.messages.pending()).map((message) => message.text)).toEqual(['kept']);
    await store.close();
  });

  async function runFixture(mode: 'idle' | 'writes', path: string): Promise<{ code: number | null; stdout: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/store/sqlite-connection.fixture.ts', path, mode, routing], {
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
