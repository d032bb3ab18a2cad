import type Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';
import { runDetached } from '../session/index.js';

interface Operation {
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Runs the store's statements of one event-loop turn in a single transaction. A commit
 * costs far more than a statement, so under load many messages share one; each caller's
 * promise settles only after the commit that holds its statement, so "accepted" still
 * means "durable". Statements run in the order they were queued, reads included, so a
 * read sees every write queued before it.
 */
export class GroupCommit {
  private queue: Operation[] = [];
  private readonly commit: (operations: Operation[]) => unknown[];
  private closed: Promise<void> | undefined;

  /** `name` says which store, in errors. */
  constructor(
    db: Database.Database,
    private readonly name: string,
  ) {
    this.commit = db.transaction((operations: Operation[]) => operations.map((operation) => operation.run()));
  }

  run<T>(statement: () => T): Promise<T> {
    if (this.closed !== undefined) return Promise.reject(new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} is closed`));
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) runDetached(() => setImmediate(() => this.flush()));
      this.queue.push({ run: statement, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Refuses more from now on and resolves once what was asked before is committed; the caller closes the database. */
  close(): Promise<void> {
    this.closed ??= this.run(() => undefined).then(() => undefined);
    return this.closed;
  }

  private flush(): void {
    const operations = this.queue;
    this.queue = [];
    let results: unknown[];
    try {
      results = this.commit(operations);
    } catch {
      // One statement failed and the transaction rolled back: run each alone so only the
      // failing caller sees its error.
      for (const operation of operations) {
        try {
          operation.resolve(operation.run());
        } catch (error) {
          operation.reject(new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} refused a write: ${messageOf(error)}`, { cause: error }));
        }
      }
      return;
    }
    operations.forEach((operation, i) => operation.resolve(results[i]));
  }
}
