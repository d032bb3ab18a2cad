import type Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';
import { runDetached } from '../session/index.js';
import { openDatabase, openReadOnlyDatabase } from './sqlite-database.js';
import { READ_OPERATIONS, sqliteOperations, type OperationName, type SqliteOperations } from './sqlite-operations.js';
import type { Retention } from './retention.js';

type Call = readonly [name: OperationName, args: readonly unknown[]];

/**
 * While busy, the longest a call nobody waits on (callLazily) waits for another call's
 * commit to join: long enough for the next message's accept at a few hundred a second,
 * short enough that what waits on its commit (a chat's next delivery) barely notices.
 */
export const LAZY_COMMIT_MS = 2;

/** While busy, a commit waits until this long after the last one, gathering the calls made meanwhile. */
export const BUSY_COMMIT_WINDOW_MS = 1;

/**
 * Busy: a commit held awaited calls made in two runs of code or more (not one caller's
 * calls side by side) this recently, so callers overlap. One caller's chained calls never
 * do; under load the window gathers them, so busy holds.
 */
export const BUSY_HOLD_MS = 20;

interface Caller {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The store's SQLite connection, on the event loop. The calls made in one event-loop turn
 * are committed together in one transaction at the next turn, so the commits grow with the
 * load; each caller's promise settles after the commit that holds its call, so "accepted"
 * still means "durable". Calls run in the order they were made, reads included. A call
 * made with callLazily, bookkeeping no caller waits for, joins the next commit another call
 * makes, or commits within LAZY_COMMIT_MS: one commit then serves it and the next message.
 * Both only while the connection is busy (callers overlapped within BUSY_HOLD_MS): then a commit also waits out BUSY_COMMIT_WINDOW_MS after the last one, so
 * the calls of the turns meanwhile share it. Otherwise each commits at the next turn, as
 * one caller's chained calls need: a timer's wake-up costs more than the commit it saves.
 * Opened read-only (openReadOnly), it runs reads alone, each turn's in one deferred transaction:
 * one consistent snapshot that never takes the write lock.
 */
export class SqliteConnection {
  private queue: Call[] = [];
  private callers: Caller[] = [];
  private scheduled = false;
  /** Set while only lazy calls wait: commits them at the end of their window. */
  private lazyTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** performance.now() of the last commit. */
  private lastCommitAt = Number.NEGATIVE_INFINITY;
  /** Set from an awaited call until the microtasks queued by then have run: one run of code. */
  private inRun = false;
  /** Runs of code whose awaited calls wait in the queue. */
  private runsQueued = 0;
  /** performance.now() of the last commit that held awaited calls of two runs or more. */
  private lastOverlapAt = Number.NEGATIVE_INFINITY;
  private readonly runBatch: (batch: readonly Call[]) => unknown[];
  private readonly runOne: (name: OperationName, args: readonly unknown[]) => unknown;

  private constructor(
    private readonly db: Database.Database,
    retention: Retention,
    /** Names the store in errors. */
    private readonly name: string,
    /** Set when opened read-only: what closes the database (and removes a private copy). */
    private readonly closeReadOnly?: () => void,
  ) {
    const operations = sqliteOperations(db, retention) as Record<string, (...args: unknown[]) => unknown>;
    const batch = db.transaction((calls: readonly Call[]) => calls.map(([name, args]) => operations[name]!(...args)));
    // Alone, an operation of several statements is still one transaction.
    const one = db.transaction((name: string, args: readonly unknown[]) => operations[name]!(...args));
    // IMMEDIATE: the write lock is taken first, so another writer (the CLI) makes this wait on
    // the busy timeout instead of failing a transaction that has already read. A reader takes
    // no write lock (DEFERRED): a running gateway's writes never wait for it.
    this.runBatch = closeReadOnly === undefined ? batch.immediate : batch.deferred;
    this.runOne = closeReadOnly === undefined ? one.immediate : one.deferred;
  }

  /** Opens the database; TL_STORE_FAILED says why it cannot. */
  static open(path: string, retention: Retention): SqliteConnection {
    return new SqliteConnection(openDatabase(path), retention, path);
  }

  /**
   * Opens an existing store for reading only (openReadOnlyDatabase): operations that write are
   * refused with TL_STORE_FAILED; TL_STORE_FAILED also says why it cannot be opened.
   */
  static openReadOnly(path: string, retention: Retention): SqliteConnection {
    const { db, close } = openReadOnlyDatabase(path);
    try {
      return new SqliteConnection(db, retention, path, close);
    } catch (error) {
      close();
      throw new ThreadlineError('TL_STORE_FAILED', `Cannot read the store at ${path}: ${describe(error)}`, { cause: error });
    }
  }

  call<K extends OperationName>(name: K, ...args: Parameters<SqliteOperations[K]>): Promise<ReturnType<SqliteOperations[K]>> {
    return this.enqueue(name, args, false);
  }

  /**
   * As call, for a write no caller waits on: it is committed with the next call's commit, or
   * within LAZY_COMMIT_MS if none comes. Its promise still settles only after that commit.
   */
  callLazily<K extends OperationName>(name: K, ...args: Parameters<SqliteOperations[K]>): Promise<ReturnType<SqliteOperations[K]>> {
    return this.enqueue(name, args, true);
  }

  private enqueue<K extends OperationName>(name: K, args: readonly unknown[], lazy: boolean): Promise<ReturnType<SqliteOperations[K]>> {
    if (this.closed) return Promise.reject(new ThreadlineError('TL_STORE_FAILED', 'The store is closed'));
    if (this.closeReadOnly !== undefined && !READ_OPERATIONS.has(name)) {
      return Promise.reject(new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} is open read-only: ${name} would change it`));
    }
    return new Promise((resolve, reject) => {
      this.queue.push([name, args]);
      this.callers.push({ resolve: resolve as (value: unknown) => void, reject });
      if (!lazy && !this.inRun) {
        this.inRun = true;
        this.runsQueued++;
        queueMicrotask(() => (this.inRun = false));
      }
      this.schedule(lazy);
    });
  }

  /** Arms the commit of the queue, in the root context: it serves every session that asked meanwhile. */
  private schedule(lazy: boolean): void {
    if (this.scheduled) return;
    const now = performance.now();
    const busy = now - this.lastOverlapAt < BUSY_HOLD_MS;
    if (lazy && busy) {
      this.lazyTimer ??= runDetached(() => setTimeout(() => this.commit(), LAZY_COMMIT_MS));
      return;
    }
    this.scheduled = true;
    const since = now - this.lastCommitAt;
    if (!busy || since >= BUSY_COMMIT_WINDOW_MS) {
      runDetached(() => setImmediate(() => this.commit()));
      return;
    }
    clearTimeout(this.lazyTimer);
    this.lazyTimer = runDetached(() => setTimeout(() => this.commit(), BUSY_COMMIT_WINDOW_MS - since));
  }

  /** Refuses more from now on, commits what was asked before, and closes the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.commit();
    if (this.closeReadOnly === undefined) this.db.close();
    else this.closeReadOnly();
  }

  private commit(): void {
    this.scheduled = false;
    clearTimeout(this.lazyTimer);
    this.lazyTimer = undefined;
    if (this.queue.length === 0) return;
    this.lastCommitAt = performance.now();
    if (this.runsQueued >= 2) this.lastOverlapAt = this.lastCommitAt;
    this.runsQueued = 0;
    const batch = this.queue;
    const callers = this.callers;
    this.queue = [];
    this.callers = [];
    let results: unknown[];
    try {
      results = this.runBatch(batch);
    } catch {
      // One statement failed and the transaction rolled back: run each alone so only the
      // failing caller sees its error.
      for (const [i, [name, args]] of batch.entries()) {
        try {
          callers[i]!.resolve(this.runOne(name, args));
        } catch (error) {
          callers[i]!.reject(storeRefused(this.closeReadOnly === undefined ? 'a write' : 'a read', error));
        }
      }
      return;
    }
    for (let i = 0; i < callers.length; i++) callers[i]!.resolve(results[i]);
  }
}

/**
 * What a caller is told when SQLite refused its statement: what and why, SQLite's code kept
 * (SQLITE_FULL), the file's path left out, as the message may reach an HTTP answer; the
 * gateway logs where the store is (StoreWrites).
 */
export function storeRefused(what: 'a write' | 'a read', error: unknown): ThreadlineError {
  return new ThreadlineError('TL_STORE_FAILED', `The store refused ${what}: ${describe(error)}`, { cause: error });
}

/** SQLite's own code is kept in the message. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? `${messageOf(error)} (${code})` : messageOf(error);
}
