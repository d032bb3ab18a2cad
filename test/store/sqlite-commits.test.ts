import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BUSY_COMMIT_WINDOW_MS, LAZY_COMMIT_MS, SqliteConnection } from '../../src/store/sqlite-connection.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('sqlite-commits');
const RETENTION = { doneMs: 60_000, failedMs: 60_000 };
const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

/**
 * Commits in the store's WAL file, read from the file itself: each commit ends with a frame
 * whose header holds the database's size after it, every other frame holds 0 there. The
 * tests write far less than a checkpoint's worth, so the WAL holds every commit since open.
 */
function commitsInWal(path: string): number {
  const wal = readFileSync(`${path}-wal`);
  const pageSize = wal.readUInt32BE(8);
  let commits = 0;
  for (let at = WAL_HEADER_BYTES; at + FRAME_HEADER_BYTES + pageSize <= wal.length; at += FRAME_HEADER_BYTES + pageSize) {
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('SqliteConnection commits', () => {
  let connection: SqliteConnection | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await connection?.close();
    connection = undefined;
  });

  function open(name: string): { path: string; connection: SqliteConnection; opened: number } {
    const path = join(tempDir(), `${name}.db`);
    connection = SqliteConnection.open(path, RETENTION);
    return { path, connection, opened: commitsInWal(path) };
  }

  it('commits the writes of one event-loop turn in one commit, and settles each only once it is in the WAL', async () => {
    const { path, connection, opened } = open('one-turn');
    const seenAtSettle: number[] = [];
    const writes = Array.from({ length: 8 }, (_, i) => connection.call('setHome', `platform-${i}`, `webhook:c${i}`).then(() => seenAtSettle.push(commitsInWal(path))));
    await Promise.all(writes);
    expect(commitsInWal(path) - opened).toBe(1);
    expect(seenAtSettle).toEqual(Array.from({ length: 8 }, () => opened + 1));
  });

  it('commits the writes of separate turns separately', async () => {
    const { path, connection, opened } = open('two-turns');
    const first = connection.call('setHome', 'a', 'webhook:a');
    await nextTurn();
    await Promise.all([first, connection.call('setHome', 'b', 'webhook:b')]);
    expect(commitsInWal(path) - opened).toBe(2);
  });

  it('lets a lazy write of one turn join the commit of a call made in a later turn', async () => {
    const { path, connection, opened } = open('lazy-joins');
    let lazySettled = false;
    const lazy = connection.callLazily('setHome', 'a', 'webhook:a').then(() => {
      lazySettled = true;
      return commitsInWal(path);
    });
    await nextTurn();
    // Not committed yet, so not settled: it waits for company.
    expect(commitsInWal(path) - opened).toBe(0);
    expect(lazySettled).toBe(false);
    const call = connection.call('setHome', 'b', 'webhook:b');
    expect(await lazy).toBe(opened + 1);
    await call;
    expect(commitsInWal(path) - opened).toBe(1);
  });

  it('commits a lazy write alone within its window when no other call comes', async () => {
    const { path, connection, opened } = open('lazy-alone');
    const started = performance.now();
    await connection.callLazily('setHome', 'a', 'webhook:a');
    expect(commitsInWal(path) - opened).toBe(1);
    // A timer fires late on a busy machine, never early.
    expect(performance.now() - started).toBeGreaterThanOrEqual(LAZY_COMMIT_MS - 1);
  });

  it('commits a lazy write before a later read of the same row sees it', async () => {
    const { connection } = open('lazy-order');
    void connection.callLazily('setHome', 'a', 'webhook:a');
    await nextTurn();
    expect(await connection.call('getHome', 'a')).toBe('webhook:a');
  });

  it('under load, holds a commit until its window after the last one and lets later turns join it', async () => {
    // The clock and timers stand still unless advanced; turns (setImmediate) run as ever.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { path, connection, opened } = open('busy-window');
    await connection.call('setHome', 'a', 'webhook:a');
    expect(commitsInWal(path) - opened).toBe(1);
    let settled = 0;
    const soon = connection.call('setHome', 'b', 'webhook:b').then(() => settled++);
    await nextTurn();
    await nextTurn();
    // Right after a commit: it waits for the window, and a later turn's call joins it.
    expect(commitsInWal(path) - opened).toBe(1);
    const joined = connection.call('setHome', 'c', 'webhook:c').then(() => settled++);
    await nextTurn();
    expect(settled).toBe(0);
    await vi.advanceTimersByTimeAsync(BUSY_COMMIT_WINDOW_MS);
    await Promise.all([soon, joined]);
    expect(commitsInWal(path) - opened).toBe(2);
    // After a quiet spell a call commits at the next turn, with no timer.
    vi.advanceTimersByTime(10 * BUSY_COMMIT_WINDOW_MS);
    const quiet = connection.call('setHome', 'd', 'webhook:d');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(3);
    await quiet;
  });
});
