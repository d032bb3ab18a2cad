import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BUSY_COMMIT_WINDOW_MS, BUSY_HOLD_MS, LAZY_COMMIT_MS, SqliteConnection } from '../../src/store/sqlite-connection.js';
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

  /** Commits the calls of two callers, the second made after the first's code ran: the connection is busy after. */
  async function makeBusy(connection: SqliteConnection): Promise<void> {
    const first = connection.call('setHome', 'x', 'webhook:x');
    await Promise.resolve();
    await Promise.all([first, connection.call('setHome', 'y', 'webhook:y')]);
  }

  /** The clock and timers stand still unless advanced; turns (setImmediate) run as ever. */
  const freezeTimers = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });

  it("commits one caller's chained calls at the next turn each, lazy ones too, with no timer", async () => {
    freezeTimers();
    const { path, connection, opened } = open('quiet');
    // Side by side in one run of code: one caller, not two.
    await Promise.all([connection.call('setHome', 'a', 'webhook:a'), connection.call('setHome', 'a2', 'webhook:a2')]);
    const lazy = connection.callLazily('setHome', 'b', 'webhook:b');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(2);
    await lazy;
    const next = connection.call('setHome', 'c', 'webhook:c');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(3);
    await next;
  });

  it('while busy, lets a lazy write join the commit of a call made in a later turn', async () => {
    freezeTimers();
    const { path, connection, opened } = open('lazy-joins');
    await makeBusy(connection);
    let lazySettled = false;
    const lazy = connection.callLazily('setHome', 'a', 'webhook:a').then(() => {
      lazySettled = true;
      return commitsInWal(path);
    });
    await nextTurn();
    await nextTurn();
    // Not committed yet, so not settled: it waits for company.
    expect(commitsInWal(path) - opened).toBe(1);
    expect(lazySettled).toBe(false);
    const call = connection.call('setHome', 'b', 'webhook:b');
    await vi.advanceTimersByTimeAsync(BUSY_COMMIT_WINDOW_MS);
    expect(await lazy).toBe(opened + 2);
    await call;
    expect(commitsInWal(path) - opened).toBe(2);
  });

  it('while busy, commits a lazy write alone at the end of its window when no other call comes', async () => {
    freezeTimers();
    const { path, connection, opened } = open('lazy-alone');
    await makeBusy(connection);
    let settled = false;
    const lazy = connection.callLazily('setHome', 'a', 'webhook:a').then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(LAZY_COMMIT_MS - 1);
    expect(settled).toBe(false);
    expect(commitsInWal(path) - opened).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await lazy;
    expect(commitsInWal(path) - opened).toBe(2);
  });

  it('commits a lazy write before a later read of the same row sees it', async () => {
    const { connection } = open('lazy-order');
    await makeBusy(connection);
    void connection.callLazily('setHome', 'a', 'webhook:a');
    await nextTurn();
    expect(await connection.call('getHome', 'a')).toBe('webhook:a');
  });

  it('while busy, holds a commit until its window after the last one and lets later turns join it', async () => {
    freezeTimers();
    const { path, connection, opened } = open('busy-window');
    await makeBusy(connection);
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
    // Past the window a call commits at the next turn, with no timer.
    vi.advanceTimersByTime(10 * BUSY_COMMIT_WINDOW_MS);
    const later = connection.call('setHome', 'd', 'webhook:d');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(3);
    await later;
  });

  it('stays busy for BUSY_HOLD_MS after calls overlapped, then commits each call at the next turn again', async () => {
    freezeTimers();
    const { path, connection, opened } = open('busy-hold');
    await makeBusy(connection);
    // One call alone, then another right after its commit: busy holds, so it waits the window.
    const alone = connection.call('setHome', 'a', 'webhook:a');
    await vi.advanceTimersByTimeAsync(BUSY_COMMIT_WINDOW_MS);
    await alone;
    const held = connection.call('setHome', 'b', 'webhook:b');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(2);
    await vi.advanceTimersByTimeAsync(BUSY_COMMIT_WINDOW_MS);
    await held;
    expect(commitsInWal(path) - opened).toBe(3);
    // No overlap for BUSY_HOLD_MS: quiet again, right after a commit too.
    vi.advanceTimersByTime(BUSY_HOLD_MS);
    await connection.call('setHome', 'c', 'webhook:c');
    const quiet = connection.call('setHome', 'd', 'webhook:d');
    await nextTurn();
    expect(commitsInWal(path) - opened).toBe(5);
    await quiet;
  });
});
