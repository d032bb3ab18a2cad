import { Worker } from 'node:worker_threads';
import { ThreadlineError, messageOf } from '../errors.js';
import { runDetached } from '../session/index.js';
import type { OperationName, Retention, SqliteOperations } from './sqlite-operations.js';

/** One operation by name with its arguments, as posted to the store's thread. */
export type Call = readonly [name: OperationName, args: readonly unknown[]];
export type Batch = readonly Call[];
/** Each call's result by position; `errors` only when a call failed, at its position. */
export interface BatchAnswer {
  results: unknown[];
  errors?: (string | undefined)[];
}
/** The thread's first message: ready, or why the database could not be opened. */
export interface WorkerReady {
  error?: string;
}
export interface StoreWorkerData {
  readonly path: string;
  readonly retention: Retention;
}

interface Caller {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The event loop's side of the store's thread (`sqlite-worker.ts`). The calls made in one
 * event-loop turn are posted together and committed there in one transaction; while a batch
 * is being committed, the next one gathers, so batches grow with the load. Each caller's
 * promise settles after the commit that holds its call, so "accepted" still means "durable".
 * Calls run in the order they were made, reads included, so a read sees every write made
 * before it.
 */
export class SqliteThread {
  private queue: Call[] = [];
  private callers: Caller[] = [];
  /** Callers of the batch being committed; undefined while the thread is idle. */
  private committing: Caller[] | undefined;
  private scheduled = false;
  private closed = false;
  /** Set once the thread ended on its own; every later call fails with it. */
  private failure: ThreadlineError | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly worker: Worker,
    /** Names the store in errors. */
    private readonly name: string,
  ) {
    worker.on('message', (answer: BatchAnswer) => this.answered(answer));
    // After the listener: adding a 'message' listener refs the thread's port again.
    worker.unref();
    this.exited = new Promise((resolve) => {
      worker.once('error', (error) => this.fail(`failed: ${error.message}`));
      worker.once('exit', (code) => {
        if (!this.closed || this.committing !== undefined || this.queue.length > 0) this.fail(`stopped (exit code ${code})`);
        resolve();
      });
    });
  }

  /** Starts the thread and opens the database there; TL_STORE_FAILED says why it cannot. */
  static async start(path: string, retention: Retention): Promise<SqliteThread> {
    // Created in the root context: its events must not run in whichever session started it.
    const worker = runDetached(() => spawnWorker({ path, retention }));
    const ready = await new Promise<WorkerReady>((resolve) => {
      const settle = (outcome: WorkerReady) => {
        worker.off('message', settle).off('error', failed).off('exit', exited);
        resolve(outcome);
      };
      const failed = (error: Error) => settle({ error: `The store's thread for ${path} failed to start: ${error.message}` });
      const exited = (code: number) => settle({ error: `The store's thread for ${path} stopped before opening it (exit code ${code})` });
      worker.on('message', settle).on('error', failed).on('exit', exited);
    });
    if (ready.error !== undefined) {
      await worker.terminate();
      throw new ThreadlineError('TL_STORE_FAILED', ready.error);
    }
    return new SqliteThread(worker, path);
  }

  call<K extends OperationName>(name: K, ...args: Parameters<SqliteOperations[K]>): Promise<ReturnType<SqliteOperations[K]>> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} is closed`));
    return new Promise((resolve, reject) => {
      this.queue.push([name, args]);
      this.callers.push({ resolve: resolve as (value: unknown) => void, reject });
      if (this.committing === undefined && !this.scheduled) {
        this.scheduled = true;
        runDetached(() => setImmediate(() => this.flush()));
      }
    });
  }

  /**
   * Refuses more from now on, and resolves once what was asked before is committed and the
   * thread has ended; rejects with TL_STORE_FAILED if the thread failed instead.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.worker.ref(); // the process waits for the thread to end
      if (this.committing === undefined && this.queue.length === 0) this.worker.postMessage('close');
    }
    await this.exited;
    if (this.failure !== undefined) throw this.failure;
  }

  private flush(): void {
    this.scheduled = false;
    this.post();
  }

  private post(): void {
    if (this.committing !== undefined || this.queue.length === 0) return;
    const batch = this.queue;
    const callers = this.callers;
    this.queue = [];
    this.callers = [];
    try {
      this.worker.postMessage(batch);
    } catch (error) {
      // A value that cannot be copied to the thread: nothing of this batch was sent.
      const refused = new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} could not be sent a batch: ${messageOf(error)}`, { cause: error });
      for (const caller of callers) caller.reject(refused);
      return;
    }
    this.committing = callers;
    this.worker.ref(); // an answer is owed: the process must wait for it
  }

  private answered({ results, errors }: BatchAnswer): void {
    const callers = this.committing!;
    this.committing = undefined;
    // The next batch goes at once: its calls have waited for this commit already.
    if (this.queue.length > 0) this.post();
    else if (this.closed) this.worker.postMessage('close');
    else this.worker.unref();
    for (let i = 0; i < callers.length; i++) {
      const error = errors?.[i];
      if (error === undefined) callers[i]!.resolve(results[i]);
      else callers[i]!.reject(new ThreadlineError('TL_STORE_FAILED', `The store at ${this.name} refused a write: ${error}`));
    }
  }

  private fail(reason: string): void {
    this.failure ??= new ThreadlineError('TL_STORE_FAILED', `The store's thread for ${this.name} ${reason}; restart the gateway`);
    const callers = [...(this.committing ?? []), ...this.callers];
    this.committing = undefined;
    this.queue = [];
    this.callers = [];
    for (const caller of callers) caller.reject(this.failure);
  }
}

/**
 * From the compiled `dist/` the thread runs `sqlite-worker.js`; from the TypeScript sources
 * (tests, benchmarks, tsx) it runs `sqlite-worker.ts` through tsx, registered in the thread.
 * No execArgv: the process's own `--import`s (telemetry's register) must not run again there.
 */
function spawnWorker(workerData: StoreWorkerData): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const script = new URL(fromSource ? './sqlite-worker.ts' : './sqlite-worker.js', import.meta.url);
  if (!fromSource) return new Worker(script, { workerData, execArgv: [] });
  // Resolved here, not in the thread: eval'd code would look for tsx from the working directory.
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData, execArgv: [] });
}
