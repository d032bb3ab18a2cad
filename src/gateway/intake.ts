import type { Logger } from 'pino';
import { commandOf } from './commands/command.js';
import { formatDestination } from '../session/delivery.js';
import { destinationOf } from '../session/routing-mismatch.js';
import { ThreadlineError, type ErrorCode } from '../errors.js';
import type { AcceptedMessage, Idempotency, InboundMessage, Intake } from '../platforms/platform.js';
import {
  captureRouting,
  contextWithSession,
  createSession,
  recordFailure,
  requireSession,
  resumeRouting,
  sessionIdOfKey,
  sessionKey,
  type InboundTrace,
  type Session,
  type SessionKeyParts,
  withSessionId,
} from '../session/index.js';
import type { AnyStore, StoredMessage } from '../store/store.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import { timeOrderedId } from './message-id.js';
import { receiveAttributes, startMessageSpan } from './message-span.js';
import type { BackendSuitability } from './gateway-options.js';
import type { TurnQueue } from './turn-queue.js';

/** Whether intake takes messages: not before the replay at start, not once the gateway stops. */
export type IntakeState = 'starting' | 'accepting' | 'stopping';

export interface GatewayIntakeOptions {
  readonly store: AnyStore;
  /** Where accepted messages go; its size is the queue that capacity counts. */
  readonly turns: TurnQueue;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** THREADLINE_CONCURRENCY: the reserve that /stop may use past a full queue. */
  readonly concurrency: number;
  /** THREADLINE_QUEUE_CAPACITY: messages waiting or running before intake answers 429. */
  readonly queueCapacity: number;
  /** THREADLINE_GROUP_SESSIONS=per-user: one session per user in group chats. */
  readonly perUserGroupSessions: boolean;
  /** THREADLINE_OUTBOX_MAX_PER_CHAT: open deliveries of one destination before its intake answers 429. */
  readonly maxOpenPerDestination: number;
  /** THREADLINE_OUTBOX_MAX_PENDING: open deliveries in all before intake answers 503. */
  readonly maxOpenTotal: number;
  /** The turn queue is shared by instances: the store counts what waits in all, and a duplicate not yet handed over is. */
  readonly sharedTurns: boolean;
  /** On Redis: while it cannot hold accepted work safely (an evicting policy), every message is refused. */
  readonly suitability?: BackendSuitability | undefined;
}

/**
 * Accepts a platform's message: checks the room, keys its session, writes it durably (deduped
 * by its idempotency key, refused while its outbox is at its cap), and hands it to the turn
 * queue in the context built for it: inbound distrust, then its session, then its
 * gateway.message span. /stop aborts its session's running turn before its own is queued.
 */
export class GatewayIntake implements Intake {
  private current: IntakeState = 'starting';
  /** Accepts between the room check and the queue: counted so capacity holds and close() waits for them. */
  private accepts = 0;
  private readonly acceptsSettledWaiters: (() => void)[] = [];

  constructor(private readonly options: GatewayIntakeOptions) {}

  get state(): IntakeState {
    return this.current;
  }

  /** Takes messages from now on. */
  open(): void {
    this.current = 'accepting';
  }

  /** Refuses messages from now on; resolves once the accepts already past the check have queued theirs. */
  close(): Promise<void> {
    this.current = 'stopping';
    if (this.accepts === 0) return Promise.resolve();
    return new Promise((resolve) => this.acceptsSettledWaiters.push(resolve));
  }

  async accept(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage> {
    const { platform } = message.session;
    try {
      const accepted = await this.take(message, inbound, idempotency);
      if (accepted.duplicate !== true) this.options.metrics.accepted(platform);
      return accepted;
    } catch (error) {
      this.options.metrics.refused(error instanceof ThreadlineError ? error.code : ('TL_INTERNAL' satisfies ErrorCode), platform, error);
      throw error;
    }
  }

  /** Queues a message accepted by an earlier process, in a new trace linked to its first. */
  async replay(stored: StoredMessage): Promise<void> {
    const { context: resumed, links } = resumeRouting(stored.routing);
    const session = requireSession(resumed);
    const { context, span } = startMessageSpan(resumed, links, { ...receiveAttributes(session), 'messaging.message.id': stored.id, 'threadline.replayed': true });
    const key = sessionKey(this.keyParts(session));
    await this.options.turns.offer({ id: stored.id, sessionId: session.sessionId, session, key, text: stored.text, context, span, routing: stored.routing });
  }

  private async take(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage> {
    const { options } = this;
    if (this.current === 'starting') throw new ThreadlineError('TL_STARTING', 'The gateway is starting; retry in a moment');
    if (this.current === 'stopping') throw new ThreadlineError('TL_SHUTTING_DOWN', 'The gateway is stopping; retry later');
    // Refused rather than accepted into a store that may evict it; a new error each time, so each refusal counts.
    const unsuitable = options.suitability?.problem();
    if (unsuitable !== undefined) throw new ThreadlineError(unsuitable.code, unsuitable.message);
    // /stop is let in past a full queue, when it is needed most, but only into a reserve as
    // large as the concurrency: a flood of /stop is refused like anything else.
    const stop = commandOf(message.text) === '/stop';
    const room = options.queueCapacity + (stop ? options.concurrency : 0);
    if (options.turns.size + this.accepts >= room) {
      throw new ThreadlineError('TL_INTAKE_FULL', `The intake queue holds ${options.queueCapacity} messages; retry later`);
    }
    this.accepts++;
    try {
      const { session, key } = await this.sessionFor(message.session);
      const id = timeOrderedId();
      const { context: jobContext, span } = startMessageSpan(contextWithSession(inbound.context, session), inbound.links, {
        ...receiveAttributes(session),
        'messaging.message.id': id,
        'threadline.inbound.baggage.dropped': inbound.droppedBaggage,
      });
      const routing = captureRouting(jobContext);
      const accepted: AcceptedMessage = { messageId: id, sessionId: session.sessionId, traceId: span.spanContext().traceId };
      try {
        const now = Date.now();
        const outcome = await options.store.messages.accept(
          { id, routing, text: message.text, receivedAt: now },
          {
            destination: destinationOf(session),
            maxOpenPerDestination: options.maxOpenPerDestination,
            maxOpenTotal: options.maxOpenTotal,
            ...(options.sharedTurns ? { maxPendingMessages: room } : {}),
            ...(idempotency === undefined
              ? {}
              : {
                  idempotency: {
                    key: idempotency.key,
                    answer: JSON.stringify({ ...accepted, fingerprint: idempotency.fingerprint }),
                    expiresAt: now + idempotency.ttlMs,
                  },
                }),
          },
        );
        if (outcome.status === 'duplicate') {
          const { fingerprint, ...first } = JSON.parse(outcome.answer) as AcceptedMessage & { fingerprint?: string };
          if (fingerprint !== idempotency?.fingerprint) {
            throw new ThreadlineError('TL_IDEMPOTENCY_CONFLICT', 'This idempotency key was used for a different message; use a new key for a new message');
          }
          // Taken before: no turn. The span stays, renamed, so a redelivery shows in the trace store.
          span.updateName('gateway.duplicate');
          span.setAttribute('messaging.message.id', first.messageId);
          // Its first sending was stored but its hand-over to the turn queue may have failed (503): hand it over now.
          if (outcome.waiting !== undefined && options.sharedTurns) await this.replay(outcome.waiting);
          span.end();
          return { ...first, duplicate: true };
        }
        if (outcome.status === 'full') {
          if (outcome.scope === 'messages') {
            throw new ThreadlineError('TL_INTAKE_FULL', `${outcome.open} messages wait for their turn across the instances (THREADLINE_QUEUE_CAPACITY); retry later`);
          }
          throw this.backlogFull(outcome.scope, outcome.open, session);
        }
      } catch (error) {
        recordFailure(span, error);
        span.end();
        throw error;
      }
      if (stop) await options.turns.abort(session.sessionId, 'stopped by /stop');
      await options.turns.offer({ id, sessionId: session.sessionId, session, key, text: message.text, context: jobContext, span, routing });
      return accepted;
    } finally {
      if (--this.accepts === 0) for (const resolve of this.acceptsSettledWaiters.splice(0)) resolve();
    }
  }

  private backlogFull(scope: 'destination' | 'total', open: number, session: Session): ThreadlineError {
    const error =
      scope === 'destination'
        ? new ThreadlineError(
            'TL_CHAT_BACKLOG_FULL',
            `This chat has ${open} deliveries not yet sent (THREADLINE_OUTBOX_MAX_PER_CHAT); its target is down or slow. Retry later`,
          )
        : new ThreadlineError('TL_OUTBOX_FULL', `The outbox holds ${open} deliveries not yet sent (THREADLINE_OUTBOX_MAX_PENDING). Retry later`);
    this.options.logger.warn({ destination: formatDestination(destinationOf(session)), open, code: error.code }, 'message refused: outbox at its cap');
    return error;
  }

  private async sessionFor(input: InboundMessage['session']): Promise<{ session: Session; key: string }> {
    const routing = createSession(input);
    const key = sessionKey(this.keyParts(routing));
    const epoch = await this.options.store.conversations.epoch(key);
    return { session: withSessionId(routing, sessionIdOfKey(key, epoch)), key };
  }

  private keyParts(session: Session): SessionKeyParts {
    const perUser = this.options.perUserGroupSessions && session.chatType !== 'dm';
    return {
      platform: session.platform,
      chatType: session.chatType,
      chatId: session.chatId,
      threadId: session.threadId,
      userId: perUser ? session.userId : undefined,
    };
  }
}
