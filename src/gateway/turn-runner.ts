import { createHash } from 'node:crypto';
import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { anonymousAuthor, unverifiedAuthor } from '../agent/author.js';
import { Admins, adminEntry, refusalText, type AdminRefusal, type Sender } from './commands/admins.js';
import type { Agent, Turn } from '../agent/agent.js';
import { BackgroundWrites } from '../background-writes.js';
import type { DeliveryRouter } from '../deliveries/router.js';
import { destinationOf } from '../session/routing-mismatch.js';
import { ThreadlineError } from '../errors.js';
import type { Platform } from '../platforms/platform.js';
import { getSession, recordFailure, type Session } from '../session/index.js';
import type { AnyStore } from '../store/store.js';
import type { GatewayMetrics, TurnResult } from '../telemetry/gateway-metrics.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { contextWithTurnCalls } from '../tools/call-key.js';
import type { TurnJob } from './turn-queue.js';
import { DEFAULT_PRESENCE, TurnPresence, type PresenceOptions } from './turn-presence.js';

export interface TurnRunnerOptions {
  readonly store: AnyStore;
  readonly agent: Agent;
  /** Where the turn's replies go. */
  readonly router: DeliveryRouter;
  /** Those whose `authenticatesSenders` proves their user ids, so they can name an admin. */
  readonly platforms: readonly Platform[];
  /** THREADLINE_ADMINS: who may run admin commands; default nobody. */
  readonly admins?: Admins | undefined;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** Typing, and the answer shown as it is written, while a turn runs; default DEFAULT_PRESENCE. */
  readonly presence?: PresenceOptions | undefined;
}

const tracer = threadlineTracer();

/**
 * Runs a queued message's turn in the context it was accepted in: the agent in an agent.turn
 * span, its replies through the router, admin commands authorized, and the message recorded as
 * finished unless shutdown cut it short.
 */
export class TurnRunner {
  /** Set once shutdown aborts running turns: those are left to run again at the next start. */
  private closing = false;
  private readonly writes: BackgroundWrites;
  /** Platforms whose user ids are proven, so they can name an admin. */
  private readonly authenticating: ReadonlySet<string>;

  constructor(private readonly options: TurnRunnerOptions) {
    this.writes = new BackgroundWrites(options.logger);
    this.authenticating = new Set(options.platforms.filter((platform) => platform.authenticatesSenders === true).map(({ name }) => name));
  }

  /** From now on a turn aborted is shutdown's: its message stays in the store for the next start. */
  closeForShutdown(): void {
    this.closing = true;
  }

  /** Resolves once the records of finished turns have committed. */
  drained(): Promise<void> {
    return this.writes.drained();
  }

  /** Runs one job's turn; its signal aborts on /stop of its session or at shutdown. Never rejects. */
  run(job: TurnJob, signal: AbortSignal): Promise<void> {
    // A replay of this message numbers its tool calls the same way, so their effects happen once.
    const turnContext = contextWithTurnCalls(job.context, job.id, this.options.store.calls);
    // The session object of this turn's context: found again in every context derived from it.
    const ownSession = getSession(turnContext);
    return context.with(turnContext, async () => {
      const { store } = this.options;
      const traceId = job.span.spanContext().traceId;
      let replies = 0;
      // Typing and the answer as it is written go to the turn's own origin, fixed now from its job.
      const presence = new TurnPresence(
        this.options.platforms.find(({ name }) => name === job.session.platform),
        { destination: destinationOf(job.session), chatType: job.session.chatType, inReplyTo: job.session.messageId },
        signal,
        this.options.presence ?? DEFAULT_PRESENCE,
        this.options.logger,
      );
      const turn: Turn = {
        session: job.session,
        text: job.text,
        messageId: job.id,
        traceId,
        senderIsAdmin: this.refusal(job.session) === undefined,
        author: this.authorOf(job.session),
        isAdmin: (author) => (this.options.admins ?? Admins.NOBODY).holds(author),
        signal,
        reply: async (text, options) => {
          // Deterministic: a turn replayed after a crash does not send a reply twice, and a
          // replay whose model says something else at the same place still says it.
          const id = `${job.id}/${++replies}-${createHash('sha256').update(text).digest('base64url').slice(0, 10)}`;
          // The live message of this answer, if one was posted, becomes the answer.
          const replaces = await presence.replying();
          const deliver = () =>
            this.options.router.deliver({ id, kind: 'reply', text, inReplyTo: job.session.messageId, attachment: options?.attachment, button: options?.button, origin: job.routing, replaces });
          // A turn answers its own message, whatever context its caller is in (a turn kept
          // and called while another message is handled): that context is left for its own.
          return getSession() === ownSession ? deliver() : context.with(turnContext, deliver);
        },
        progress: (text) => presence.progress(text),
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
        presence.start();
        const started = performance.now();
        const result = await this.turn(turn, signal);
        this.options.metrics.turn(job.session.platform, result, (performance.now() - started) / 1000);
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
        presence.close();
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

  /** The session's sender as history records authors: its admin entry only when the platform proves the id. */
  private authorOf(session: Session): string {
    if (session.userId === undefined) return anonymousAuthor(session.platform);
    return this.authenticating.has(session.platform) ? adminEntry(session.platform, session.userId) : unverifiedAuthor(session.platform);
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
