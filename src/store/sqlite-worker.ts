/**
 * The store's thread: owns the SQLite connection and runs each batch posted by the event
 * loop as one transaction, answering only after its commit. A commit, and the WAL
 * checkpoints that come with commits, never hold up the event loop this way.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { messageOf } from '../errors.js';
import { openDatabase, sqliteOperations } from './sqlite-operations.js';
import type { Batch, BatchAnswer, StoreWorkerData, WorkerReady } from './sqlite-thread.js';

const port = parentPort!;
const { path, retention } = workerData as StoreWorkerData;

let db: Database.Database;
try {
  db = openDatabase(path);
} catch (error) {
  port.postMessage({ error: messageOf(error) } satisfies WorkerReady);
  process.exit(0);
}
const operations = sqliteOperations(db, retention) as Record<string, (...args: unknown[]) => unknown>;
// IMMEDIATE: the write lock is taken first, so another writer (the CLI) makes this wait on
// the busy timeout instead of failing a transaction that has already read.
const runBatch = db.transaction((batch: Batch) => batch.map(([name, args]) => operations[name]!(...args))).immediate;
// Alone, an operation of several statements is still one transaction.
const runOne = db.transaction((name: string, args: readonly unknown[]) => operations[name]!(...args)).immediate;

port.on('message', (message: Batch | 'close') => {
  if (message === 'close') {
    db.close();
    port.close();
    return;
  }
  let answer: BatchAnswer;
  try {
    answer = { results: runBatch(message) };
  } catch {
    // One statement failed and the transaction rolled back: run each alone so only the
    // failing caller sees its error.
    answer = { results: [], errors: [] };
    for (const [i, [name, args]] of message.entries()) {
      try {
        answer.results[i] = runOne(name, args);
      } catch (error) {
        answer.errors![i] = describe(error);
      }
    }
  }
  port.postMessage(answer);
});
port.postMessage({} satisfies WorkerReady);

/** An error crosses to the event loop as text: SQLite's own code is kept in it. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? `${messageOf(error)} (${code})` : messageOf(error);
}
