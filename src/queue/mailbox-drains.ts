import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { runDetached } from '../session/index.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import { DrainJobs } from './drain-jobs.js';
import type { LeaseTimings } from './lease-worker-options.js';
import { MailboxOwners } from './mailbox-owners.js';
import type { MailboxMessage, Mailboxes, Ownership } from './mailboxes.js';
import { Slots } from './slots.js';

/** How often an instance looks for mailboxes with work and no drain job, unless told; the stalled interval when set. */
const DEFAULT_SWEEP_EVERY_MS = 5_000;

/**
 * Runs the messages of mailbox `key`, claimed here by `owner` with `head` at its head, each step
 * fenced by the ownership. `maybeFinished`: the head may be one an owner that died finished
 * before it could pop it. The slot and the ownership are let go once it settles.
 */
export type Drain = (key: string, owner: Ownership, head: MailboxMessage, maybeFinished: boolean) => Promise<void>;

export interface MailboxDrainsOptions extends LeaseTimings {
  readonly mailboxes: Mailboxes;
  /** The BullMQ queue of the mailboxes' drain jobs, and its prefix. */
  readonly queue: string;
  readonly prefix: string;
  /** Mailboxes drained here at once (THREADLINE_CONCURRENCY, the outbox's maxInFlight). */
  readonly slots: number;
  /** Adds `key`'s drain job (BullMQ's deduplication folds it into one that waits). */
  readonly wake: (key: string) => Promise<void>;
  readonly logger: Logger;
  /** Names the queue in logs. */
  readonly what: string;
  /** What a mailbox holds work for, in the sweep's log: `conversations`, `destinations`. */
  readonly mailboxesAre: string;
  readonly sweepEveryMs?: number | undefined;
  /** After a Redis error, how long the drain jobs' fetch waits before it fetches again. */
  readonly retryDelayMs?: number | undefined;
}

/**
 * The drains of one kind of mailbox on this instance, for the turn queue and the outbox alike:
 * one count of slots, which a claim at offer time and a drain job take alike; the ownerships,
 * renewed while held; the drain jobs, fetched while a slot is free; the sweep that gives a
 * mailbox with work, no owner and no job a drain job; and the drains under way, which a stop
 * waits for. What a drain does with each message is its owner's (`Drain`).
 */
export class MailboxDrains {
  private readonly slots: Slots;
  readonly owners: MailboxOwners;
  private drain: Drain | undefined;
  private drainJobs: DrainJobs | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  /** A sweep under way (one waiting on Redis while it is away): the next one is skipped. */
  private sweeping = false;
  /** Set by stop(): no claim at offer time, and a drain job fetched from now on is handed to another instance. */
  private stopped = false;
  /** Drains under way here, claimed at an offer or by a drain job. */
  private readonly underWay = new Set<Promise<void>>();

  constructor(private readonly options: MailboxDrainsOptions) {
    this.slots = new Slots(Math.max(1, options.slots));
    this.owners = new MailboxOwners(options.mailboxes, options.lockDurationMs, options.logger);
  }

  /** Starts taking drain jobs (BullMQ blocks on `connection`, one of their own) and sweeping; each mailbox claimed here runs `drain`. */
  async start(connection: Redis, drain: Drain): Promise<void> {
    const { options } = this;
    // Stopped before it started: nothing is taken here.
    if (this.stopped) return;
    this.drain = drain;
    this.drainJobs = new DrainJobs({
      queue: options.queue,
      prefix: options.prefix,
      connection,
      slots: this.slots,
      logger: options.logger,
      what: options.what,
      lockDurationMs: options.lockDurationMs,
      stalledIntervalMs: options.stalledIntervalMs,
      retryDelayMs: options.retryDelayMs,
    });
    await this.drainJobs.start((key) => this.take(key));
    const everyMs = options.sweepEveryMs ?? options.stalledIntervalMs ?? DEFAULT_SWEEP_EVERY_MS;
    this.sweeper = setInterval(() => void this.sweep(everyMs), everyMs);
    this.sweeper.unref();
  }

  /** For an offer: a slot and a fresh ownership, to claim its mailbox if nobody owns it; undefined when drains do not run here or no slot is free. */
  claim(): Ownership | undefined {
    return this.drain !== undefined && !this.stopped && this.slots.tryTake() ? this.owners.ownership(randomUUID()) : undefined;
  }

  /** The offer made with `claim` did not claim its mailbox: the slot taken for it goes back. */
  unclaimed(claim: Ownership | undefined): void {
    if (claim !== undefined) this.slots.give();
  }

  /** Drains `key`, claimed here, in the background in the slot taken for it; the slot and the ownership are let go when it ends. */
  drainHere(key: string, owner: Ownership, head: MailboxMessage, maybeFinished: boolean): void {
    const drain = this.drain!;
    // Async, so that a drain that throws at once still lets its slot go below.
    const drained = runDetached(async () => drain(key, owner, head, maybeFinished))
      .catch((error: unknown) => this.options.logger.error({ err: error, mailbox: key }, `${this.options.what}: a drain failed; its mailbox is drained again once its lease lapses`))
      .finally(() => {
        this.owners.drop(key, owner.token);
        this.slots.give();
      });
    this.underWay.add(drained);
    void drained.finally(() => this.underWay.delete(drained));
  }

  /** Gives up owning `key`'s mailbox, with a drain job for what is left in it: another instance, or this one later, goes on. */
  async release(key: string, owner: Ownership): Promise<void> {
    if ((await this.options.mailboxes.release(key, owner.token)) > 0) await this.options.wake(key);
  }

  /** Claims no more at offer time, fetches no more drain jobs, sweeps no more; drains under way go on. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.drainJobs?.stopFetching();
  }

  /** Resolves once no drain is under way; close() waits again for any that a drain job taken as the stop began started. */
  async settled(): Promise<void> {
    while (this.underWay.size > 0) await Promise.allSettled([...this.underWay]);
  }

  /** Stops, closes the drain jobs' worker (a job fetched but not yet taken goes back to the queue), and waits for every drain. */
  async close(): Promise<void> {
    this.stop();
    await this.drainJobs?.close();
    this.drainJobs = undefined;
    // A job being taken as the stop began may have started one more drain.
    await this.settled();
  }

  /** A drain job's mailbox, in the slot taken for it: drained here unless another instance owns it (that one runs what waits). */
  private async take(key: string): Promise<void> {
    let handedOver = false;
    try {
      // Stopping: its successor (added now, as the job is still active) runs elsewhere.
      if (this.stopped) return await this.options.wake(key);
      const owner = this.owners.ownership(randomUUID());
      const head = await this.options.mailboxes.claim(key, owner);
      if (head.fenced || head.message === undefined) return;
      handedOver = true;
      this.drainHere(key, owner, head.message, true);
    } finally {
      if (!handedOver) this.slots.give();
    }
  }

  /** Gives a drain job to each mailbox with work that has neither an owner nor one (a producer died between its push and its add). */
  private async sweep(everyMs: number): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    const { options } = this;
    try {
      const stuck = await options.mailboxes.stuck(options.queue, Date.now() - everyMs);
      // Stopping: what is left is for the sweep of an instance that goes on, as the queue may close under this one.
      for (const key of stuck) {
        if (this.stopped) return;
        await options.wake(key);
      }
      if (stuck.length > 0) options.logger.warn({ [options.mailboxesAre]: stuck.length }, `gave ${options.mailboxesAre} with waiting work the drain job they lacked`);
    } catch (error) {
      // A sweep cut short by the stop (its connection closed under it) is no failure to report.
      if (this.stopped) return;
      options.logger.warn({ err: redisFailure(error) }, `could not look for ${options.mailboxesAre} without a drain job; trying again at the next sweep`);
    } finally {
      this.sweeping = false;
    }
  }
}
