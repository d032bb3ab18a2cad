import { trace } from '@opentelemetry/api';
import type { Agent, Turn } from '../../../src/agent/agent.js';
import type { Attachment } from '../../../src/session/delivery.js';
import { recordFailure, requireSession, withSession, type SessionInput } from '../../../src/session/index.js';

/** A reply the turn made. */
export interface RecordedReply {
  readonly text: string;
  readonly attachment?: Attachment | undefined;
}

export interface TurnRun {
  readonly replies: RecordedReply[];
  /** What the turn showed as written so far (turn.progress), in order. */
  readonly progress: string[];
  /** The trace of the turn's agent.turn span. */
  readonly traceId: string;
  /** Commands the turn asked to authorize. */
  readonly authorized: string[];
  /** Settles when the agent's handle() does (rejects as it does). */
  readonly done: Promise<void>;
}

/**
 * Runs `agent.handle` as the gateway does: inside the session, under an agent.turn span
 * (here a root span, the gateway's gateway.message left out). Replies are recorded.
 */
export function startTurn(
  agent: Agent,
  session: SessionInput,
  text: string,
  options: { readonly admin?: boolean; readonly signal?: AbortSignal; readonly author?: string; readonly admins?: readonly string[] } = {},
): TurnRun {
  const replies: RecordedReply[] = [];
  const progress: string[] = [];
  const authorized: string[] = [];
  let traceId = '';
  const done = withSession(session, () =>
    trace.getTracer('test').startActiveSpan('agent.turn', async (span) => {
      traceId = span.spanContext().traceId;
      const turn: Turn = {
        session: requireSession(),
        text,
        messageId: 'm-1',
        traceId,
        senderIsAdmin: options.admin ?? false,
        author: options.author ?? (options.admin === true ? 'test:admin' : 'test:user'),
        // Admins: those named, else this turn's sender when it is one.
        isAdmin: (author) => (options.admins ?? (options.admin === true ? [options.author ?? 'test:admin'] : [])).includes(author),
        signal: options.signal ?? new AbortController().signal,
        reply: async (replyText, replyOptions) => {
          replies.push({ text: replyText, attachment: replyOptions?.attachment });
        },
        progress: (so) => {
          progress.push(so);
        },
        setHome: () => Promise.reject(new Error('not in these tests')),
        newConversation: () => Promise.resolve(),
        authorize: async (command) => {
          authorized.push(command);
          return options.admin ?? false;
        },
      };
      try {
        await agent.handle(turn);
      } catch (error) {
        recordFailure(span, error);
        throw error;
      } finally {
        span.end();
      }
    }),
  );
  return { replies, progress, authorized, done, get traceId() { return traceId; } };
}
