import { randomUUID } from 'node:crypto';
import { SpanKind, trace } from '@opentelemetry/api';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ThreadlineError } from '../errors.js';
import type { RunTurn, TurnJob, TurnQueue } from '../gateway/turn-queue.js';
import { recordFailure, requireSession } from '../session/index.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { parseInboundJobData, type InboundJobData } from './inbound-job-data.js';
import { consumerContext, jobContextOf } from './job-context.js';
import { addDrainJob } from './drain-jobs.js';
import type { LeaseTimings } from './lease-worker-options.js';
import { decodeTurnAbort, encodeTurnAbort } from './turn-abort-message.js';
import { MailboxDrains } from './mailbox-drains.js';
import type { MailboxHead, MailboxMessage, Ownership } from './mailboxes.js';
import { TurnMailboxes } from './turn-mailboxes.js';

export interface RedisTurnQueueOptions extends LeaseTimings {
  /** A new ioredis connection for BullMQ (maxRetriesPerRequest null); each one asked for is closed by close(). */
  readonly connection: () => Redis;
  readonly keys: RedisKeys;
  /** THREADLINE_CONCURRENCY: turns this instance runs at once, each of another conversation. */
  readonly concurrency: number;
  /** The partition count an earlier version recorded: its inbound queues (`inbound-<p>`) are moved into mailboxes at start. */
  readonly legacyPartitions?: number;
  /** How often this instance looks for conversations with work and no drain job; default the stalled interval, else 5 s. */
  readonly sweepEveryMs?: number;
  /** THREADLINE_WORKERS includes turns: this instance runs turns; otherwise it only queues them. */
  readonly work: boolean;
  readonly logger: Logger;
  /** How long an offer or an abort broadcast waits for Redis before it is reported unavailable; default 5 s. */
  readonly commandTimeoutMs?: number;
  /** After a Redis error, how long a worker waits before it fetches again (and close() may wait as long). BullMQ's default 15 s. */
  readonly retryDelayMs?: number;
}

/** A turn running here: what /stop, close() and a lost ownership abort. */
interface RunningTurn {
  readonly sessionId: string;
  readonly controller: AbortController;
}

const tracer = threadlineTracer();
const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;
/** Turns a drain job runs before it yields its slot to other conversations (its successor waits at the back). */
const TURNS_PER_DRAIN = 16;

/** A waiting message read back and checked: its data and the context its turn starts in. */
interface UsableMessage {
  readonly data: InboundJobData;
  readonly consumer: ReturnType<typeof consumerContext>;
}

/**
 * The distributed gateway's turn queue. The conversation is the unit of order: a message waits
 * in its conversation's mailbox (TurnMailboxes, a Redis list per session key) with at most one
 * owner, cluster-wide. The instance that takes a message with a slot free
 * (THREADLINE_CONCURRENCY) owns a mailbox nobody owns and runs it at once; a mailbox with an
 * owner waits for it; otherwise a drain job in the BullMQ queue `turns` (one per conversation,
 * `deduplication: { id: key, keepLastIfActive: true }`) lets any instance with a free slot claim
 * it. The owner runs the mailbox's turns one after the other, each fenced by its token, so a
 * lapsed owner never runs a turn beside the next one. A turn cut short by close() stays at the
 * head of its mailbox, given up with a drain job, so it runs next elsewhere; one whose instance
 * died does the same once its lease lapses and a sweep finds it.
 */
export class RedisTurnQueue implements TurnQueue {
  /** Told apart from other instances on the abort channel. */
  private readonly instance = randomUUID();
  private readonly connections: Redis[] = [];
  private queueOfTurns: Queue | undefined;
  private mailboxesOnCommands: TurnMailboxes | undefined;
  private drainsOnCommands: MailboxDrains | undefined;
  /** By owner token: the turn each mailbox owned here runs. */
  private readonly running = new Map<string, RunningTurn>();
  /** What runs a turn, once start() began working: until then nothing is drained here. */
  private runner: RunTurn | undefined;
  private producer: Redis | undefined;
  private offers = 0;
  /** Set by idle() and close(): a drain job goes back to the queue before its next turn. */
  private draining = false;
  /** Set by close(): a turn aborted now stays at the head of its mailbox instead of completing. */
  private closing = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: RedisTurnQueueOptions) {}

  /** Turns running here plus offers on their way to Redis. */
  get size(): number {
    return this.running.size + this.offers;
  }

  /** Moves what an older version left in partitions into mailboxes; with `work`, runs up to `concurrency` conversations at once. */
  async start(run: RunTurn): Promise<void> {
    try {
      await this.migrateLegacyQueues();
      if (!this.options.work) return;
      const subscriber = this.connect();
      subscriber.on('message', (channel: string, payload: string) => {
        if (channel === this.abortChannel) this.onAbortMessage(payload);
      });
      await subscriber.subscribe(this.abortChannel);
      // Idle or closed while starting: nothing is drained here.
      if (this.draining) return;
      this.runner = run;
      await this.drains().start(this.connect(), (key, owner, head) => this.drain(key, owner, head));
    } catch (error) {
      throw redisFailure(error);
    }
  }

  /**
   * Adds the message to its conversation's mailbox (once: by its id) and ends its span. With a
   * slot free here and nobody draining the conversation, this instance drains it at once;
   * otherwise its owner runs it in turn, or a drain job is added for any instance to take.
   */
  async offer(job: TurnJob): Promise<void> {
    this.offers++;
    try {
      const data: InboundJobData = { id: job.id, key: job.key, text: job.text, context: jobContextOf(job.context, job.routing) };
      // A free slot here: the conversation is drained here at once if nobody owns it, without a drain job.
      const claim = this.drains().claim();
      const offering = this.mailboxes().offer(job.key, job.id, JSON.stringify(data), claim === undefined ? {} : { claim });
      let offered;
      try {
        offered = await this.withinTimeout(offering, 'queue the message');
      } catch (error) {
        // Given up on, the offer may still land and claim the mailbox for nobody: then it is released with a drain job.
        if (claim !== undefined) void offering.then((late) => (late.outcome === 'claimed' ? this.giveUp(job.key, claim) : undefined)).catch(() => undefined);
        throw error;
      } finally {
        if (offered?.outcome !== 'claimed') this.drains().unclaimed(claim);
      }
      job.span.setAttribute('messaging.destination.name', this.options.keys.turnsQueue);
      if (offered.outcome === 'claimed') this.drains().drainHere(job.key, claim!, offered.head, false);
      // Waiting already (a replay at start): one round trip, no more; had its first producer died before adding its drain job, the sweep adds it.
      // Owned: its owner pops it in turn.
      else if (offered.outcome === 'added') await this.withinTimeout(this.wake(job.key), 'queue the message');
    } catch (error) {
      const failure = redisFailure(error);
      recordFailure(job.span, failure);
      throw failure;
    } finally {
      // The turn runs in a span of its own, possibly on another instance: this one is handed over.
      job.span.end();
      this.offers--;
      this.settleIdle();
    }
  }

  /** Aborts the session's turn running here; otherwise tells the other instances to abort it. */
  async abort(sessionId: string, reason: string): Promise<boolean> {
    if (this.abortHere(sessionId, reason)) return true;
    try {
      await this.withinTimeout(this.commands().publish(this.abortChannel, encodeTurnAbort({ sessionId, reason, from: this.instance })), 'broadcast /stop');
    } catch (error) {
      // /stop's own message still queues and runs; failing its intake for the broadcast would lose it.
      this.options.logger.warn({ err: redisFailure(error), session: sessionId }, 'could not tell other instances to abort a turn');
    }
    return false;
  }

  /** Takes no more jobs from now on (another instance takes them) and resolves once nothing runs here. */
  async idle(): Promise<void> {
    this.draining = true;
    // The wait is ours (settleIdle), and another instance takes what waits.
    this.drainsOnCommands?.stop();
    if (this.size === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Takes no more jobs, aborts the turns running here, leaves each at the head of its mailbox
   * and hands its drain job back to the queue, then closes the worker and connections.
   */
  async close(reason: string): Promise<void> {
    this.draining = true;
    this.closing = true;
    const drains = this.drainsOnCommands;
    drains?.stop();
    for (const turn of this.running.values()) turn.controller.abort(new Error(reason));
    await drains?.settled();
    // Waits too for a drain that a job taken as the close began started: it gives its mailbox up before any turn, as draining is set.
    await drains?.close();
    await this.queueOfTurns?.close().catch(() => undefined);
    for (const connection of this.connections) connection.disconnect();
  }

  private get abortChannel(): string {
    return this.options.keys.key('abort');
  }

  /** Adds the conversation's drain job: nothing when one waits, its successor when one runs (BullMQ's deduplication). */
  private wake(key: string): Promise<void> {
    return addDrainJob(this.queue(), key);
  }

  /**
   * Runs the turns waiting in the mailbox of conversation `key`, owned here, oldest first, each
   * step fenced by the ownership; a turn leaves the mailbox once it has run. Gives the mailbox
   * up (with a drain job for what is left) when this instance is stopping and after
   * TURNS_PER_DRAIN turns; MailboxDrains lets the slot and the ownership go at the end.
   */
  private async drain(key: string, owner: Ownership, first: MailboxMessage): Promise<void> {
    const mailboxes = this.mailboxes();
    this.drains().owners.hold(key, owner.token, () => this.ownershipLost(owner.token));
    let head: MailboxHead = { fenced: false, message: first };
    try {
      for (let turns = 0; ; turns++) {
        if (head.fenced) return this.fenced(key);
        // Empty: the pop gave the mailbox up; a message offered from now on finds no owner.
        if (head.message === undefined) return;
        if (this.draining || turns === TURNS_PER_DRAIN) return await this.giveUp(key, owner);
        const message = this.usable(head.message, key);
        if (message !== undefined) {
          const aborted = await this.runTurn(owner.token, message, this.runner!);
          // As the gateway leaves such a message pending in the store, its mailbox keeps it at the head.
          if (this.closing && aborted) return await this.giveUp(key, owner);
        }
        head = await mailboxes.pop(key, owner, head.message.id, message === undefined);
      }
    } catch (error) {
      // Redis failed mid-drain: once the lease lapses, a sweep gives the conversation a drain job.
      this.options.logger.warn({ err: redisFailure(error), session: key }, 'a conversation could not be drained; it is drained again once its lease lapses');
    }
  }

  /** Gives up owning `key`'s mailbox, with a drain job for what is left in it: another instance, or this one later, goes on. */
  private giveUp(key: string, owner: Ownership): Promise<void> {
    return this.drains().release(key, owner);
  }

  /** The mailbox owned under `token` is another's now (this one was cut off past the lease): its turn here is aborted. */
  private ownershipLost(token: string): void {
    const running = this.running.get(token);
    this.options.logger.warn({ queue: this.options.keys.turnsQueue }, 'a turn lost its lock in Redis; another instance runs it, this one is aborted');
    running?.controller.abort(new Error('the turn lost its lock: another instance runs it'));
  }

  /** The message and the context its turn starts in, or undefined (logged without its text) when either is damaged: it is then kept aside. */
  private usable(message: MailboxMessage, key: string): UsableMessage | undefined {
    try {
      const data = parseInboundJobData(JSON.parse(message.data));
      return { data, consumer: consumerContext(data.context) };
    } catch (error) {
      this.options.logger.error(
        { err: error instanceof SyntaxError ? new Error('the message data is not JSON') : error, session: key, message: message.id, keptIn: this.mailboxes().unusable },
        'a waiting message is unusable; it is kept aside and its conversation goes on',
      );
      return undefined;
    }
  }

  /** Runs one turn in its consumer span; true when it was aborted. */
  private async runTurn(token: string, { data, consumer }: UsableMessage, run: RunTurn): Promise<boolean> {
    const span = tracer.startSpan(
      'gateway.turn',
      {
        kind: SpanKind.CONSUMER,
        links: consumer.links,
        attributes: {
          'messaging.system': 'threadline',
          'messaging.operation.type': 'process',
          'messaging.destination.name': this.options.keys.turnsQueue,
          'messaging.message.id': data.id,
        },
      },
      consumer.context,
    );
    const context = trace.setSpan(consumer.context, span);
    const session = requireSession(context);
    const controller = new AbortController();
    this.running.set(token, { sessionId: session.sessionId, controller });
    try {
      // run() ends the span.
      await run({ id: data.id, sessionId: session.sessionId, session, key: data.key, text: data.text, context, span, routing: data.context.routing }, controller.signal);
    } finally {
      this.running.delete(token);
      this.settleIdle();
    }
    return controller.signal.aborted;
  }

  /** The mailbox is another's (this one's lease lapsed): that instance drains the conversation now, this one stops. */
  private fenced(key: string): void {
    this.options.logger.warn({ queue: this.options.keys.turnsQueue, session: key }, 'a drain job lost its lock; another instance drains its conversation');
  }

  /** Moves the jobs left in an older version's `inbound-<p>` queues into mailboxes, once, and removes those queues. */
  private async migrateLegacyQueues(): Promise<void> {
    const count = this.options.legacyPartitions ?? 0;
    if (count === 0) return;
    const { keys } = this.options;
    const names = Array.from({ length: count }, (_, index) => keys.legacyInboundQueue(index));
    const pipeline = this.commands().pipeline();
    for (const name of names) pipeline.exists(`${keys.queuePrefix}:${name}:meta`, `${keys.queuePrefix}:${name}:wait`, `${keys.queuePrefix}:${name}:id`);
    const found = ((await pipeline.exec()) ?? []).map(([error, value]) => {
      if (error !== null) throw error;
      return (value as number) > 0;
    });
    for (const [index, name] of names.entries()) {
      if (!found[index]) continue;
      const moved = await this.mailboxes().migrate(name);
      for (const key of moved) await this.wake(key);
      const old = new Queue(name, { connection: this.commands(), prefix: keys.queuePrefix });
      try {
        await old.obliterate({ force: true });
      } catch (error) {
        // Another instance starting now obliterates it at the same time: only one that is still there is a problem.
        if ((await this.commands().exists(`${keys.queuePrefix}:${name}:meta`)) > 0) {
          this.options.logger.warn({ err: redisFailure(error), queue: name }, 'could not remove an emptied inbound partition of an earlier version; the next start tries again');
        }
      } finally {
        await old.close();
      }
      this.options.logger.warn({ queue: name, conversations: moved.length }, 'moved the messages of an inbound partition of an earlier version into mailboxes');
    }
  }

  private onAbortMessage(payload: string): void {
    const message = decodeTurnAbort(payload);
    if (message === undefined) {
      this.options.logger.warn({ channel: this.abortChannel }, 'ignored a message on the abort channel that is not an abort');
      return;
    }
    if (message.from !== this.instance) this.abortHere(message.sessionId, message.reason);
  }

  private abortHere(sessionId: string, reason: string): boolean {
    let found = false;
    for (const turn of this.running.values()) {
      if (turn.sessionId !== sessionId) continue;
      turn.controller.abort(new Error(reason));
      found = true;
    }
    return found;
  }

  private settleIdle(): void {
    if (this.size > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private queue(): Queue {
    if (this.queueOfTurns === undefined) {
      const queue = new Queue(this.options.keys.turnsQueue, { connection: this.commands(), prefix: this.options.keys.queuePrefix });
      queue.on('error', (error) => this.options.logger.warn({ err: redisFailure(error), queue: queue.name }, 'turns queue error'));
      this.queueOfTurns = queue;
    }
    return this.queueOfTurns;
  }

  private drains(): MailboxDrains {
    this.drainsOnCommands ??= new MailboxDrains({
      mailboxes: this.mailboxes(),
      queue: this.options.keys.turnsQueue,
      prefix: this.options.keys.queuePrefix,
      slots: this.options.concurrency,
      wake: (key) => this.wake(key),
      logger: this.options.logger,
      what: 'turns queue',
      mailboxesAre: 'conversations',
      lockDurationMs: this.options.lockDurationMs,
      stalledIntervalMs: this.options.stalledIntervalMs,
      sweepEveryMs: this.options.sweepEveryMs,
      retryDelayMs: this.options.retryDelayMs,
    });
    return this.drainsOnCommands;
  }

  private mailboxes(): TurnMailboxes {
    this.mailboxesOnCommands ??= new TurnMailboxes(this.commands(), this.options.keys);
    return this.mailboxesOnCommands;
  }

  /** The connection for producing, publishing and the mailboxes' scripts. */
  private commands(): Redis {
    this.producer ??= this.connect();
    return this.producer;
  }

  private connect(): Redis {
    const connection = this.options.connection();
    this.connections.push(connection);
    return connection;
  }

  /** `work`, or TL_REDIS_UNAVAILABLE once `commandTimeoutMs` passes: a command waits for Redis forever otherwise. */
  private withinTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ThreadlineError('TL_REDIS_UNAVAILABLE', `Redis did not answer within ${timeoutMs} ms to ${what}: check that it is running and reachable`)),
        timeoutMs,
      );
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}
