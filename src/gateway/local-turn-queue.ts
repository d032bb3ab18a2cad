import { SessionScheduler } from './session-scheduler.js';
import type { RunTurn, TurnJob, TurnQueue } from './turn-queue.js';

/** The embedded gateway's turn queue: its own process runs every turn, in the session scheduler. */
export class LocalTurnQueue implements TurnQueue {
  private scheduler: SessionScheduler<TurnJob> | undefined;

  constructor(private readonly options: { readonly concurrency: number; readonly capacity: number }) {}

  get size(): number {
    return this.scheduler?.size ?? 0;
  }

  async start(run: RunTurn): Promise<void> {
    this.scheduler = new SessionScheduler(run, this.options);
  }

  async offer(job: TurnJob): Promise<void> {
    // Accepted already: the gateway checked the room before the store took it.
    this.started().offer(job, true);
  }

  async abort(sessionId: string, reason: string): Promise<boolean> {
    return this.started().abort(sessionId, reason);
  }

  idle(): Promise<void> {
    return this.scheduler?.idle() ?? Promise.resolve();
  }

  close(reason: string): Promise<void> {
    return this.scheduler?.close(reason) ?? Promise.resolve();
  }

  private started(): SessionScheduler<TurnJob> {
    if (this.scheduler === undefined) throw new Error('LocalTurnQueue used before start()');
    return this.scheduler;
  }
}
