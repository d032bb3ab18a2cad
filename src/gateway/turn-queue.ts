import type { Context, Span } from '@opentelemetry/api';
import type { RoutingSnapshot, Session } from '../session/index.js';

/** An accepted message on its way to its turn. */
export interface TurnJob {
  readonly id: string;
  readonly sessionId: string;
  readonly session: Session;
  /** The session key (sessionKey()): conversation epochs and mailboxes are kept by it. */
  readonly key: string;
  readonly text: string;
  /** The session entered and gateway.message active: the job runs in exactly this. */
  readonly context: Context;
  readonly span: Span;
  /** The routing captured at acceptance; origin of every reply. */
  readonly routing: RoutingSnapshot;
}

/** Runs a turn; its signal aborts on /stop of its session or at shutdown. Never rejects. */
export type RunTurn = (job: TurnJob, signal: AbortSignal) => Promise<void>;

/**
 * Where accepted messages wait for their turn, in order within their session: in process
 * (the embedded gateway) or in Redis, a mailbox per conversation that every instance works (the distributed one).
 * The gateway hands it each accepted message and the function that runs a turn.
 */
export interface TurnQueue {
  /** Messages this instance holds: waiting here or running here. */
  readonly size: number;
  /** Starts running turns with `run`. */
  start(run: RunTurn): Promise<void>;
  /**
   * Queues an accepted (or replayed) message. The job's span is ended by whoever runs the
   * turn here, or at hand-over when the turn runs elsewhere.
   */
  offer(job: TurnJob): Promise<void>;
  /** Aborts the running turn of a session (/stop), wherever it runs; true when it ran here. Never rejects. */
  abort(sessionId: string, reason: string): Promise<boolean>;
  /** Takes no more work that another instance could take, and resolves once this instance runs and holds nothing. */
  idle(): Promise<void>;
  /**
   * Starts nothing more and aborts the turns running here; resolves when they have returned.
   * What waits stays where it is: the store (embedded) or Redis (distributed) keeps it; the
   * distributed queue leaves a turn aborted here at the head of its conversation's mailbox, so
   * it runs next elsewhere.
   */
  close(reason: string): Promise<void>;
}
