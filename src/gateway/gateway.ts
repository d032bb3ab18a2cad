import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Admins, refusalText, type AdminRefusal, type Sender } from './commands/admins.js';
import type { Agent, Turn } from '../agent/agent.js';
import { commandOf } from './commands/command.js';
import { BackgroundWrites } from '../background-writes.js';
import { settledBy } from '../deadline.js';
import { formatDestination } from '../session/delivery.js';
import type { DeliveryQueue } from '../deliveries/delivery-queue.js';
import { Outbox, type OutboxOptions } from '../deliveries/outbox.js';
import type { OutboxStats } from '../deliveries/outbox-stats.js';
import { DeliveryRouter } from '../deliveries/router.js';
import { destinationOf } from '../session/routing-mismatch.js';
import { ThreadlineError, type ErrorCode } from '../errors.js';
import type { AcceptedMessage, Idempotency, InboundMessage, Intake, Platform } from '../platforms/platform.js';
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
import type { AnyStore, OutboxStore, StoredMessage } from '../store/store.js';
import { GatewayMetrics, type TurnResult } from '../telemetry/gateway-metrics.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { contextWithTurnCalls } from '../tools/call-key.js';
import { timeOrderedId } from './message-id.js';
import { LocalTurnQueue } from './local-turn-queue.js';
import type { TurnJob, TurnQueue } from './turn-queue.js';

/** What a distributed delivery queue is built from: the gateway's platforms, settings, log and metrics. */
export interface DeliveryQueueParts {
  readonly platforms: ReadonlyMap<string, Platform>;
  readonly options: OutboxOptions;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
}

/** Where turns wait and deliveries are sent when that is not this process alone (THREADLINE_REDIS_URL). */
export interface GatewayQueues {
  readonly turns: TurnQueue;
  readonly deliveries: (parts: DeliveryQueueParts) => DeliveryQueue;
}

export interface GatewayOptions {
  /** Without `queues`, the embedded store, whose outbox rows the in-process outbox sends. */
  readonly store: AnyStore;
  /** Default: in process, on the embedded store. */
  readonly queues?: GatewayQueues;
  readonly platforms: readonly Platform[];
  readonly agent: Agent;
  readonly logger: Logger;
  /** THREADLINE_CONCURRENCY: turns running at once across sessions. */
  readonly concurrency: number;
  /** THREADLINE_QUEUE_CAPACITY: messages waiting or running before intake answers 429. */
  readonly queueCapacity: number;
  /** THREADLINE_GROUP_SESSIONS=per-user: one session per user in group chats. */
  readonly perUserGroupSessions: boolean;
  /** THREADLINE_STRICT_ROUTING: refuse a delivery whose destination differs from its origin. */
  readonly strictRouting: boolean;
  /** THREADLINE_ADMINS: who may run admin commands; default nobody. */
  readonly admins?: Admins;
  /** Default: threadline's instruments on the meter provider registered when the gateway is built. */
  readonly metrics?: GatewayMetrics;
  readonly outbox: OutboxOptions & {
    /** THREADLINE_OUTBOX_MAX_PER_CHAT: open deliveries of one destination before its intake answers 429. */
    readonly maxOpenPerDestination: number;
    /** THREADLINE_OUTBOX_MAX_PENDING: open deliveries in all before intake answers 503. */
    readonly maxOpenTotal: number;
  };
}

/** What /v1/health reports. */
export interface GatewayHealth {
  readonly status: 'ok' | 'degraded' | 'starting' | 'stopping';
  /** Why intake refuses some or all messages, in words; empty when it takes everything. */
  readonly reasons: string[];
  readonly queued: number;
  readonly outbox: { readonly open: number; readonly fullChats: number };
  readonly deliveries: OutboxStats & { readonly mismatches: number };
}

const tracer = threadlineTracer();
/** Why a stored message can never run: its routing no longer validates. */
const UNUSABLE_ROW: ReadonlySet<ErrorCode> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
/** How long turns aborted at the shutdown deadline get to return before the store closes. */
const ABORTED_TURNS_GRACE_MS = 1_000;

/**
 * The pipeline: accepts a platform's message durably, runs its turn in order within its
 * session, and delivers what the agent says. Each message's work runs in the context built
 * for it at acceptance — inbound distrust, then its session, then its gateway.message span —
 * and in nothing else.
 */
export class Gateway implements Intake {
  readonly router: DeliveryRouter;
  readonly outbox: DeliveryQueue;
  readonly metrics: GatewayMetrics;
  /** Stops the gauges' reading; set while the gateway runs. */
  private unobserve: (() => void) | undefined;
  private readonly writes: BackgroundWrites;
  private readonly turns: TurnQueue;
  private state: 'starting' | 'accepting' | 'stopping' = 'starting';
  /** Set once stop() aborts running turns: those are left to run again at the next start. */
  private closing = false;
  /** Accepts between the room check and the queue: counted so capacity holds and stop() waits for them. */
  private accepts = 0;
  private readonly acceptsSettledWaiters: (() => void)[] = [];
  /** Platforms whose user ids are proven, so they can name an admin. */
  private readonly authenticating: ReadonlySet<string>;

  constructor(private readonly options: GatewayOptions) {
    const platforms = new Map(options.platforms.map((platform) => [platform.name, platform]));
    this.authenticating = new Set(options.platforms.filter((platform) => platform.authenticatesSenders === true).map(({ name }) => name));
    this.writes = new BackgroundWrites(options.logger);
    // Built here, not at module load: only then is the meter provider startMetrics registered in place.
    this.metrics = options.metrics ?? new GatewayMetrics();
    const queues = options.queues;
    this.outbox =
      queues === undefined
        ? new Outbox(embeddedOutbox(options.store), platforms, options.outbox, options.logger, this.metrics)
        : queues.deliveries({ platforms, options: options.outbox, logger: options.logger, metrics: this.metrics });
    this.router = new DeliveryRouter(
      options.store.homes,
      new Set(platforms.keys()),
      this.outbox,
      { strictRouting: options.strictRouting },
      options.logger,
      this.metrics,
    );
    this.turns = queues?.turns ?? new LocalTurnQueue({ concurrency: options.concurrency, capacity: options.queueCapacity });
  }

  /** Messages waiting or running. */
  get queued(): number {
    return this.turns.size;
  }

  async accept(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage> {
    const { platform } = message.session;
    try {
      const accepted = await this.intake(message, inbound, idempotency);
      if (accepted.duplicate !== true) this.metrics.accepted(platform);
      return accepted;
    } catch (error) {
      this.metrics.refused(error instanceof ThreadlineError ? error.code : ('TL_INTERNAL' satisfies ErrorCode), platform, error);
      throw error;
    }
  }

  private async intake(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage> {
    if (this.state === 'starting') throw new ThreadlineError('TL_STARTING', 'The gateway is starting; retry in a moment');
    if (this.state === 'stopping') throw new ThreadlineError('TL_SHUTTING_DOWN', 'The gateway is stopping; retry later');
    // /stop is let in past a full queue, when it is needed most, but only into a reserve as
    // large as the concurrency: a flood of /stop is refused like anything else.
    const stop = commandOf(message.text) === '/stop';
    const room = this.options.queueCapacity + (stop ? this.options.concurrency : 0);
    if (this.turns.size + this.accepts >= room) {
      throw new ThreadlineError('TL_INTAKE_FULL', `The intake queue holds ${this.options.queueCapacity} messages; retry later`);
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
        const outcome = await this.options.store.messages.accept(
          { id, routing, text: message.text, receivedAt: now },
          {
            destination: destinationOf(session),
            maxOpenPerDestination: this.options.outbox.maxOpenPerDestination,
            maxOpenTotal: this.options.outbox.maxOpenTotal,
            ...(this.options.queues === undefined ? {} : { maxPendingMessages: room }),
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
          if (outcome.waiting !== undefined && this.options.queues !== undefined) await this.replay(outcome.waiting);
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
      if (stop) await this.turns.abort(session.sessionId, 'stopped by /stop');
      await this.turns.offer({ id, sessionId: session.sessionId, session, key, text: message.text, context: jobContext, span, routing });
      return accepted;
    } finally {
      if (--this.accepts === 0) for (const resolve of this.acceptsSettledWaiters.splice(0)) resolve();
    }
  }

  /** What /v1/health reports: the queue, the outbox, and why intake refuses, if it does. */
  async health(): Promise<GatewayHealth> {
    const { maxOpenPerDestination, maxOpenTotal } = this.options.outbox;
    const pressure = await this.outbox.pressure(maxOpenPerDestination);
    const reasons: string[] = [];
    if (pressure.open >= maxOpenTotal) {
      reasons.push(`the outbox holds ${pressure.open} deliveries not yet sent (THREADLINE_OUTBOX_MAX_PENDING=${maxOpenTotal}): intake answers 503`);
    }
    if (pressure.fullDestinations > 0) {
      reasons.push(
        `${pressure.fullDestinations} chat(s) hold ${maxOpenPerDestination} deliveries not yet sent (THREADLINE_OUTBOX_MAX_PER_CHAT): their intake answers 429; see threadline deliveries list`,
      );
    }
    if (this.turns.size >= this.options.queueCapacity) reasons.push(`the intake queue is full (THREADLINE_QUEUE_CAPACITY=${this.options.queueCapacity})`);
    return {
      status: this.state === 'accepting' ? (reasons.length === 0 ? 'ok' : 'degraded') : this.state,
      reasons,
      queued: this.turns.size,
      outbox: { open: pressure.open, fullChats: pressure.fullDestinations },
      deliveries: { ...this.outbox.stats(), mismatches: this.router.mismatches() },
    };
  }

  /** Sends what earlier processes left, replays accepted messages they did not finish, opens intake. */
  async start(): Promise<void> {
    const { maxOpenPerDestination } = this.options.outbox;
    this.unobserve = this.metrics.observe({
      queued: () => this.turns.size,
      outbox: async () => {
        const pressure = await this.outbox.pressure(maxOpenPerDestination);
        return { pending: pressure.open, fullChats: pressure.fullDestinations, oldestPendingSince: pressure.oldestOpenSince };
      },
    });
    await this.outbox.start();
    await this.turns.start((job, signal) => this.run(job, signal));
    for (const stored of await this.options.store.messages.pending()) {
      try {
        await this.replay(stored);
      } catch (error) {
        // Only a row that no longer validates is dropped; a queue that failed (Redis away) fails the start, the row kept.
        if (!(error instanceof ThreadlineError && UNUSABLE_ROW.has(error.code))) throw error;
        this.options.logger.error({ err: error, message: stored.id }, 'stored message is unusable and was dropped');
        await this.options.store.messages.complete(stored.id);
      }
    }
    this.state = 'accepting';
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

  /** Queues a message accepted by an earlier process, in a new trace linked to its first. */
  private async replay(stored: StoredMessage): Promise<void> {
    const { context: resumed, links } = resumeRouting(stored.routing);
    const session = requireSession(resumed);
    const { context, span } = startMessageSpan(resumed, links, { ...receiveAttributes(session), 'messaging.message.id': stored.id, 'threadline.replayed': true });
    const key = sessionKey(this.keyParts(session));
    await this.turns.offer({ id: stored.id, sessionId: session.sessionId, session, key, text: stored.text, context, span, routing: stored.routing });
  }

  /**
   * Stops intake and lets queued and running turns, and sends under way, finish until
   * `timeoutMs` from now: one deadline for the whole stop. Then aborts the turns still running
   * (their `signal`) and the sends still waiting (they stay in the outbox), and gives the
   * aborted turns up to a second to return; one that ignores its signal is left behind. What
   * did not finish stays in the store and runs again at the next start. Resolves once the
   * records of finished work have committed.
   */
  async stop(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.state = 'stopping';
    try {
      // An accept already past the intake check answers 202, so its message runs like any queued one.
      await settledBy(this.acceptsSettled(), deadline);
      await settledBy(this.turns.idle(), deadline);
      this.closing = true;
      const turnsReturned = this.turns.close('the gateway is stopping');
      await this.outbox.stop(deadline);
      if (!(await settledBy(turnsReturned, Date.now() + ABORTED_TURNS_GRACE_MS))) {
        this.options.logger.error('a turn ignored its abort signal at shutdown; its message runs again at the next start');
      }
      // Sends that ended while the aborted turns returned are recorded before the store closes.
      await this.outbox.recorded();
      await this.writes.drained();
    } finally {
      // The gauges read the store, which closes next, whether or not the steps above succeeded.
      this.unobserve?.();
      this.unobserve = undefined;
    }
  }

  private acceptsSettled(): Promise<void> {
    if (this.accepts === 0) return Promise.resolve();
    return new Promise((resolve) => this.acceptsSettledWaiters.push(resolve));
  }

  private async sessionFor(input: InboundMessage['session']): Promise<{ session: Session; key: string }> {
    const routing = createSession(input);
    const parts = this.keyParts(routing);
    const key = sessionKey(parts);
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

  private run(job: TurnJob, signal: AbortSignal): Promise<void> {
    // A replay of this message numbers its tool calls the same way, so their effects happen once.
    return context.with(contextWithTurnCalls(job.context, job.id), async () => {
      const { store } = this.options;
      const traceId = job.span.spanContext().traceId;
      let replies = 0;
      const turn: Turn = {
        session: job.session,
        text: job.text,
        messageId: job.id,
        traceId,
        signal,
        reply: (text, options) =>
          this.router.deliver({
            // Deterministic: a turn replayed after a crash does not send its replies twice.
            id: `${job.id}/${++replies}`,
            kind: 'reply',
            text,
            inReplyTo: job.session.messageId,
            attachment: options?.attachment,
            origin: job.routing,
          }),
        setHome: async () => {
          // Enforced here too, so an agent that skips authorize() cannot move the home.
          const refused = this.refusal(job.session);
          if (refused !== undefined) throw new ThreadlineError('TL_NOT_ADMIN', `/sethome is for admins (${refused.reason})`);
          const destination = destinationOf(job.session);
          await store.homes.set(destination);
          return destination;
        },
        newConversation: async () => {
          await store.conversations.next(job.key);
        },
        authorize: (command) => this.authorize(turn, command),
      };
      try {
        const started = performance.now();
        const result = await this.turn(turn, signal);
        this.metrics.turn(job.session.platform, result, (performance.now() - started) / 1000);
        // A turn cut short by shutdown stays in the store and runs again after the restart.
        // Otherwise the slot is free now; the record follows. If it is lost, the message runs
        // again after a restart and its replies, keeping their ids, are not sent twice.
        if (!(signal.aborted && this.closing)) {
          this.writes.add(store.messages.complete(job.id), 'could not record message as finished; it will run again after a restart', {
            message: job.id,
          });
        }
      } catch (error) {
        // Only a store that throws instead of rejecting gets here; the message stays pending.
        this.options.logger.error({ err: error, message: job.id }, 'could not finish message');
      } finally {
        job.span.end();
      }
    });
  }

  /** Whether the turn's sender is an admin; a refusal is recorded on the active span, logged and answered. */
  private async authorize(turn: Turn, command: string): Promise<boolean> {
    const refused = this.refusal(turn.session);
    if (refused === undefined) return true;
    const { sender, reason } = refused;
    trace.getActiveSpan()?.addEvent('command.refused', { 'threadline.command.name': command, 'threadline.command.reason': reason });
    this.options.logger.warn({ command, reason, message: turn.messageId }, 'admin command refused');
    await turn.reply(refusalText(command, sender, reason));
    return false;
  }

  /** Why the session's sender is no admin, or undefined when it is one. */
  private refusal(session: Session): { sender: Sender; reason: AdminRefusal } | undefined {
    const sender: Sender = { platform: session.platform, userId: session.userId, authenticated: this.authenticating.has(session.platform) };
    const reason = (this.options.admins ?? Admins.NOBODY).refusal(sender);
    return reason === undefined ? undefined : { sender, reason };
  }

  /** Runs the agent in an agent.turn span; a failed turn is answered, not dropped. Never rejects. */
  private async turn(turn: Turn, signal: AbortSignal): Promise<TurnResult> {
    try {
      await tracer.startActiveSpan('agent.turn', async (span) => {
        try {
          await this.options.agent.handle(turn);
        } catch (error) {
          recordFailure(span, error);
          throw error;
        } finally {
          span.end();
        }
      });
      return signal.aborted ? 'aborted' : 'ok';
    } catch (error) {
      trace.getActiveSpan()?.setStatus({ code: SpanStatusCode.ERROR, message: 'agent turn failed' });
      this.options.logger.error({ err: error, message: turn.messageId }, 'agent turn failed');
      if (signal.aborted) return 'aborted';
      await turn.reply(`Sorry, that failed. Trace ${turn.traceId}.`).catch(() => {});
      return 'error';
    }
  }
}

/** Semantic conventions of a platform message taken in: the platform is the messaging system. */
function receiveAttributes(session: Session): Attributes {
  return { 'messaging.system': session.platform, 'messaging.operation.type': 'receive' };
}

/** Starts a message's gateway.message span in `parent`; the job runs in the returned context. */
function startMessageSpan(parent: Context, links: Link[], attributes: Attributes): { context: Context; span: Span } {
  const span = tracer.startSpan('gateway.message', { kind: SpanKind.SERVER, links, attributes }, parent);
  return { context: trace.setSpan(parent, span), span };
}

/** The embedded store's outbox, whose rows the in-process outbox leases; refused for a store without it. */
function embeddedOutbox(store: AnyStore): OutboxStore {
  const outbox = store.outbox as Partial<OutboxStore>;
  if (typeof outbox.claim !== 'function') {
    throw new ThreadlineError('TL_INTERNAL', 'A store without leases (the distributed one) needs its queues: pass GatewayOptions.queues');
  }
  return store.outbox as OutboxStore;
}
