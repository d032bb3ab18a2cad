import type { TurnJob } from './turn-queue.js';

/** A turn running now on this instance, as the operator's page lists it. */
export interface LiveTurn {
  readonly messageId: string;
  readonly platform: string;
  readonly chatId: string;
  readonly chatName?: string | undefined;
  readonly threadId?: string | undefined;
  /** ms since the epoch. */
  readonly startedAt: number;
  /** Of the message's gateway.message span. */
  readonly traceId: string;
}

/**
 * The turns this instance runs now: at most the turn queue's concurrency, each removed when its
 * turn returns, so it needs no bound of its own.
 */
export class LiveTurns {
  private readonly running = new Map<TurnJob, LiveTurn>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Runs `turn`, listed as live until it settles. */
  async during<T>(job: TurnJob, turn: () => Promise<T>): Promise<T> {
    const { platform, chatId, chatName, threadId } = job.session;
    this.running.set(job, { messageId: job.id, platform, chatId, chatName, threadId, startedAt: this.now(), traceId: job.span.spanContext().traceId });
    try {
      return await turn();
    } finally {
      this.running.delete(job);
    }
  }

  /** Longest running first. */
  list(): LiveTurn[] {
    return [...this.running.values()].sort((a, b) => a.startedAt - b.startedAt);
  }
}
