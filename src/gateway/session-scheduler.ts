import { runDetached } from '../session/index.js';

export interface SchedulerOptions {
  /** Turns running at once, across sessions. */
  readonly concurrency: number;
  /** Jobs waiting or running at once; beyond it offer() refuses (the caller answers 429). */
  readonly capacity: number;
}

export interface ScheduledJob {
  readonly sessionId: string;
}

/**
 * Runs jobs in FIFO order within a session and concurrently across sessions, at most
 * `concurrency` at once, holding at most `capacity`. Each job is started from the root
 * context (runDetached), so it never inherits the routing of whichever job's completion
 * happened to start it (pitfall: Inherited routing); the job brings its own context.
 */
export class SessionScheduler<J extends ScheduledJob> {
  private readonly waiting = new Map<string, J[]>();
  private readonly running = new Map<string, AbortController>();
  /** Sessions with a job waiting and none running, in the order they became ready. */
  private ready: string[] = [];
  private readyHead = 0;
  private held = 0;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  private stoppedWaiters: (() => void)[] = [];

  constructor(
    /** Runs a job; its signal aborts on abort() of its session or on close(). */
    private readonly run: (job: J, signal: AbortSignal) => Promise<void>,
    private readonly options: SchedulerOptions,
  ) {}

  /** Jobs waiting or running. */
  get size(): number {
    return this.held;
  }

  hasRoom(): boolean {
    return this.held < this.options.capacity;
  }

  /** Queues a job; false, and nothing queued, when full. `force` is for replaying accepted work. */
  offer(job: J, force = false): boolean {
    if (!force && !this.hasRoom()) return false;
    this.held++;
    const queue = this.waiting.get(job.sessionId);
    if (queue !== undefined) {
      queue.push(job);
    } else {
      this.waiting.set(job.sessionId, [job]);
      if (!this.running.has(job.sessionId)) this.ready.push(job.sessionId);
    }
    this.pump();
    return true;
  }

  /** Aborts the running job of a session; true if there was one. */
  abort(sessionId: string, reason: string): boolean {
    const controller = this.running.get(sessionId);
    controller?.abort(new Error(reason));
    return controller !== undefined;
  }

  /** Resolves once nothing is waiting or running. */
  idle(): Promise<void> {
    if (this.held === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Starts nothing more and aborts the running jobs; resolves when they have returned.
   * Waiting jobs are left where they are (the caller keeps them durable elsewhere).
   */
  close(reason: string): Promise<void> {
    this.closed = true;
    for (const controller of this.running.values()) controller.abort(new Error(reason));
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.stoppedWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.options.concurrency && this.readyHead < this.ready.length) {
      const sessionId = this.ready[this.readyHead++]!;
      const queue = this.waiting.get(sessionId)!;
      const job = queue.shift()!;
      if (queue.length === 0) this.waiting.delete(sessionId);
      const controller = new AbortController();
      this.running.set(sessionId, controller);
      runDetached(() => this.run(job, controller.signal))
        .catch(() => {}) // run() reports its own failures; the queue must go on.
        .finally(() => this.finish(sessionId));
    }
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyHead);
      this.readyHead = 0;
    }
  }

  private finish(sessionId: string): void {
    this.running.delete(sessionId);
    this.held--;
    if (this.closed && this.running.size === 0) {
      for (const resolve of this.stoppedWaiters.splice(0)) resolve();
    }
    if (this.waiting.has(sessionId)) this.ready.push(sessionId);
    this.pump();
    if (this.held === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
