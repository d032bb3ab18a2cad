import { settledBy } from '../deadline.js';
import type { DeliveryQueue } from '../deliveries/delivery-queue.js';
import { Outbox } from '../deliveries/outbox.js';
import type { OutboxStats } from '../deliveries/outbox-stats.js';
import { DeliveryRouter } from '../deliveries/router.js';
import { ThreadlineError, type ErrorCode } from '../errors.js';
import type { AcceptedMessage, Idempotency, InboundMessage, Intake } from '../platforms/platform.js';
import type { InboundTrace } from '../session/index.js';
import type { AnyStore, OutboxStore } from '../store/store.js';
import { StoreWrites } from '../store/store-writes.js';
import { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import type { GatewayOptions } from './gateway-options.js';
import { GatewayIntake } from './intake.js';
import { LocalTurnQueue } from './local-turn-queue.js';
import { TurnRunner } from './turn-runner.js';
import type { TurnQueue } from './turn-queue.js';

/** What /v1/health reports. */
export interface GatewayHealth {
  readonly status: 'ok' | 'degraded' | 'starting' | 'stopping';
  /** Why intake refuses some or all messages, in words; empty when it takes everything. */
  readonly reasons: string[];
  readonly queued: number;
  readonly outbox: { readonly open: number; readonly fullChats: number };
  readonly deliveries: OutboxStats & { readonly mismatches: number };
  /** Why intake refuses every message though open (Redis turned unsuitable): /v1/ready answers 503 with it. */
  readonly refusal: ThreadlineError | undefined;
}

/** Why a stored message can never run: its routing no longer validates. */
const UNUSABLE_ROW: ReadonlySet<ErrorCode> = new Set(['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
/** How long turns aborted at the shutdown deadline get to return before the store closes. */
const ABORTED_TURNS_GRACE_MS = 1_000;

/**
 * The pipeline: accepts a platform's message durably (GatewayIntake), runs its turn in order
 * within its session (TurnRunner, on the turn queue), and delivers what the agent says. The
 * gateway wires them and owns their lifecycle: what an earlier process left is replayed at
 * start, and stop drains within one deadline.
 */
export class Gateway implements Intake {
  readonly router: DeliveryRouter;
  readonly outbox: DeliveryQueue;
  readonly metrics: GatewayMetrics;
  /** Stops the gauges' reading; set while the gateway runs. */
  private unobserve: (() => void) | undefined;
  private readonly turns: TurnQueue;
  private readonly intake: GatewayIntake;
  private readonly runner: TurnRunner;
  /** Whether the store takes writes (readiness); `store` reports each write to it. */
  private readonly writes: StoreWrites;
  private readonly store: AnyStore;

  constructor(private readonly options: GatewayOptions) {
    this.writes = options.storeWrites ?? new StoreWrites(options.logger);
    const store = this.writes.watched(options.store);
    this.store = store;
    const platforms = new Map(options.platforms.map((platform) => [platform.name, platform]));
    // Built here, not at module load: only then is the meter provider startMetrics registered in place.
    this.metrics = options.metrics ?? new GatewayMetrics();
    this.metrics.startAtZero(platforms.keys());
    const queues = options.queues;
    this.outbox =
      queues === undefined
        ? new Outbox(embeddedOutbox(store), platforms, options.outbox, options.logger, this.metrics)
        : queues.deliveries({ platforms, options: options.outbox, logger: options.logger, metrics: this.metrics });
    this.router = new DeliveryRouter(
      store.homes,
      new Set(platforms.keys()),
      this.outbox,
      { strictRouting: options.strictRouting },
      options.logger,
      this.metrics,
    );
    this.turns = queues?.turns ?? new LocalTurnQueue({ concurrency: options.concurrency, capacity: options.queueCapacity });
    this.intake = new GatewayIntake({
      store,
      turns: this.turns,
      metrics: this.metrics,
      logger: options.logger,
      concurrency: options.concurrency,
      queueCapacity: options.queueCapacity,
      perUserGroupSessions: options.perUserGroupSessions,
      maxOpenPerDestination: options.outbox.maxOpenPerDestination,
      maxOpenTotal: options.outbox.maxOpenTotal,
      sharedTurns: queues !== undefined,
      suitability: options.suitability,
    });
    this.runner = new TurnRunner({
      store,
      agent: options.agent,
      router: this.router,
      platforms: options.platforms,
      admins: options.admins,
      metrics: this.metrics,
      logger: options.logger,
      presence: options.presence,
    });
  }

  /** Messages waiting or running. */
  get queued(): number {
    return this.turns.size;
  }

  accept(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage> {
    return this.intake.accept(message, inbound, idempotency);
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
    const refusal = this.options.suitability?.problem();
    if (refusal !== undefined) reasons.push(`${refusal.message} Intake answers 503 (${refusal.code}) until it is fixed`);
    const state = this.intake.state;
    return {
      status: state === 'accepting' ? (reasons.length === 0 ? 'ok' : 'degraded') : state,
      reasons,
      queued: this.turns.size,
      outbox: { open: pressure.open, fullChats: pressure.fullDestinations },
      deliveries: { ...this.outbox.stats(), mismatches: this.router.mismatches() },
      refusal,
    };
  }

  /**
   * Why the store refuses writes (a full disk), while it does: once a write failed, each call
   * makes a write that changes nothing, so the first that succeeds ends it. Undefined while
   * writes succeed.
   */
  async storeWriteFailure(): Promise<ThreadlineError | undefined> {
    if (this.writes.failure() === undefined) return undefined;
    // Its outcome is recorded by the watch; the failure it may throw is the one reported.
    await this.store.probeWrite().catch(() => undefined);
    return this.writes.failure();
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
    const since = Date.now();
    await this.outbox.start();
    await this.turns.start((job, signal) => this.runner.run(job, signal));
    const pending = await this.store.messages.pending();
    for (const stored of pending) {
      try {
        await this.intake.replay(stored);
      } catch (error) {
        // Only a row that no longer validates is dropped; a queue that failed (Redis away) fails the start, the row kept.
        if (!(error instanceof ThreadlineError && UNUSABLE_ROW.has(error.code))) throw error;
        this.options.logger.error({ err: error, message: stored.id }, 'stored message is unusable and was dropped');
        await this.store.messages.complete(stored.id);
      }
    }
    this.intake.open();
    this.options.logger.info({ replayed: pending.length, ms: Date.now() - since }, 'ready: intake open');
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
    try {
      // An accept already past the intake check answers 202, so its message runs like any queued one.
      await settledBy(this.intake.close(), deadline);
      await settledBy(this.turns.idle(), deadline);
      this.runner.closeForShutdown();
      const turnsReturned = this.turns.close('the gateway is stopping');
      await this.outbox.stop(deadline);
      if (!(await settledBy(turnsReturned, Date.now() + ABORTED_TURNS_GRACE_MS))) {
        this.options.logger.error('a turn ignored its abort signal at shutdown; its message runs again at the next start');
      }
      // Sends that ended while the aborted turns returned are recorded before the store closes.
      await this.outbox.recorded();
      await this.runner.drained();
    } finally {
      // The gauges read the store, which closes next, whether or not the steps above succeeded.
      this.unobserve?.();
      this.unobserve = undefined;
    }
  }
}

/** The embedded store's outbox, whose rows the in-process outbox leases; refused for a store without it. */
function embeddedOutbox(store: AnyStore): OutboxStore {
  const outbox = store.outbox as Partial<OutboxStore>;
  if (typeof outbox.claim !== 'function') {
    throw new ThreadlineError('TL_INTERNAL', 'A store without leases (the distributed one) needs its queues: pass GatewayOptions.queues');
  }
  return store.outbox as OutboxStore;
}
