import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { formatDestination, type DeliveryRecord, type DeliveryStatus } from '../session/delivery.js';
import { getSession, type RoutingSnapshot } from '../session/index.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import {
  MAX_STATE_IDS,
  type AddOutcome,
  type DeliveryState,
  type NewDelivery,
  type OutboxPressure,
  type OutboxRecords,
  type OverdueQuery,
} from '../store/store.js';
import { deliveryJobId, deliveryOf, parseDeliveryJob, type DeliveryJobData } from './delivery-job.js';
import { jobContextOf, type JobContext } from './job-context.js';
import { addDrainJob } from './drain-jobs.js';
import { Mailboxes, type MailboxMessage, type Ownership } from './mailboxes.js';
import { OutboxMarkers, type FinishedRecord } from './outbox-markers.js';

/** How long done deliveries stay listed, as the embedded store keeps its done rows: a day. */
export const DONE_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Finished deliveries read from Redis at a time while listing: memory stays bounded however many are kept. */
const PAGE = 500;
/** Destinations whose head is read for the oldest open delivery: those whose head moved longest ago. */
const OLDEST_HEADS = 100;

export interface RedisOutboxRecordsOptions {
  /** For the outbox's own commands (mailboxes, markers and counters). */
  readonly redis: Redis;
  /** The BullMQ queue of the destinations' drain jobs (`deliveries`), over the same connection. */
  readonly queue: Queue;
  readonly keys: RedisKeys;
  /** How long a dead letter is kept (THREADLINE_DEAD_LETTER_RETENTION_MS). */
  readonly deadLetterRetentionMs: number;
  /** How long a done delivery is kept, for listing and replays; default a day. */
  readonly doneRetentionMs?: number;
  /**
   * True when a process of the terminal tool is still in the process table unreported: its
   * completion notice (`proc:<id>:done`) is then left out of overdue(), as ProcessTable.unreported reports it.
   */
  readonly processUnreported?: (processId: string) => Promise<boolean>;
}

/**
 * The distributed outbox's records. The destination is the unit of order: each delivery waits
 * in its destination's mailbox (Mailboxes, namespace `outbox`, keyed by formatDestination),
 * and the `deliveries` queue holds one drain job per destination with work (plus one
 * successor). A marker beside each delivery (OutboxMarkers) makes a second add of one id a
 * no-op, keeps the open counters, and keeps the finished ones listable (done a day, dead
 * letters THREADLINE_DEAD_LETTER_RETENTION_MS). The drain jobs (RedisOutbox) send; this
 * answers everything else the gateway and the CLI ask of an outbox.
 */
export class RedisOutboxRecords implements OutboxRecords {
  readonly mailboxes: Mailboxes;
  private readonly markers: OutboxMarkers;
  private readonly doneRetentionMs: number;

  constructor(private readonly options: RedisOutboxRecordsOptions) {
    this.mailboxes = new Mailboxes(options.redis, options.keys, 'outbox');
    this.markers = new OutboxMarkers(options.redis, options.keys);
    this.doneRetentionMs = options.doneRetentionMs ?? DONE_RETENTION_MS;
  }

  /** BullMQ's prefix of the queue, for its workers. */
  get queuePrefix(): string {
    return this.options.keys.queuePrefix;
  }

  /** What moving an earlier version's partitions needs of this outbox's Redis. */
  get migration(): { readonly redis: Redis; readonly keys: RedisKeys } {
    return { redis: this.options.redis, keys: this.options.keys };
  }

  /** The queue of the destinations' drain jobs. */
  get queue(): Queue {
    return this.options.queue;
  }

  /** Adds `key`'s drain job (due in `delayMs`): nothing when one waits, its successor when one runs (BullMQ's deduplication). */
  wake(key: string, delayMs = 0): Promise<void> {
    return addDrainJob(this.options.queue, key, delayMs);
  }

  /**
   * A drain job finished delivery `jobId`: no longer counted open, its last `data` kept as long
   * as its state is listed. A second finish (run again after a crash) changes nothing.
   */
  async finish(jobId: string, state: 'done' | 'failed', data: string, reason?: string): Promise<void> {
    const retention = state === 'done' ? this.doneRetentionMs : this.options.deadLetterRetentionMs;
    await this.markers.finish(jobId, state, retention, data, reason);
  }

  /** True when delivery `jobId` finished already (its drain job died between its finish and its pop). */
  async finished(jobId: string): Promise<boolean> {
    const [marker] = await this.markers.read([jobId]);
    return marker !== undefined && marker.state !== 'open';
  }

  /**
   * Puts the delivery in its destination's mailbox: 'queued', or 'exists' when its id was
   * recorded before (nothing changes). Never 'claimed': the drain jobs send.
   */
  async add(delivery: NewDelivery): Promise<AddOutcome> {
    return (await this.addOwned(delivery)).outcome;
  }

  /** Queues a delivery that must not be sent: its drain job fails it at once (a dead letter). 'exists' as add(). */
  async addRefused(delivery: NewDelivery, reason: string): Promise<AddOutcome> {
    return (await this.addOwned(delivery, { refused: reason })).outcome;
  }

  /**
   * add() (or addRefused() with `refused`); with `claim`, the caller becomes the owner of a
   * destination nobody drains and gets its `claimed` head to send, instead of a drain job.
   */
  async addOwned(
    delivery: NewDelivery,
    options: { readonly refused?: string; readonly claim?: Ownership } = {},
  ): Promise<{ readonly outcome: AddOutcome; readonly key: string; readonly claimed?: MailboxMessage }> {
    const { refused, claim } = options;
    const key = formatDestination(delivery.destination);
    const jobId = deliveryJobId(delivery.id);
    const { created, state } = await this.markers.create(jobId, key);
    if (!created && state !== 'open') return { outcome: 'exists', key };
    const data: DeliveryJobData = {
      ...delivery,
      attempts: 0,
      attemptsSince: delivery.createdAt,
      context: producerContext(delivery.origin),
      ...(refused === undefined ? {} : { refused }),
    };
    // Also for a marker found open: an add cut off between its marker and its mailbox left it out; the mailbox takes an id once.
    const offered = await this.mailboxes.offer(key, jobId, JSON.stringify(data), claim === undefined ? {} : { claim });
    const outcome = created ? 'queued' : 'exists';
    if (offered.outcome === 'claimed') return { outcome, key, claimed: offered.head };
    // Waiting already (a replay): its drain job is added all the same, in case its first producer died before it did.
    if (offered.outcome === 'added' || offered.outcome === 'waiting') await this.wake(key);
    return { outcome, key };
  }

  /**
   * (Migration) Puts an open job of an earlier version's partition in its destination's
   * mailbox as it was (attempts, due time): its destination, or undefined when it finished
   * already; a damaged one is kept aside in the mailboxes' unusable hash.
   */
  async adopt(jobId: string, data: unknown): Promise<string | undefined> {
    const parsed = parseDeliveryJob(data);
    if (!('job' in parsed)) {
      await this.options.redis.hset(this.mailboxes.unusable, jobId, JSON.stringify(data ?? null));
      return undefined;
    }
    const key = formatDestination(parsed.job.destination);
    const [marker] = await this.markers.read([jobId]);
    if (marker !== undefined && marker.state !== 'open') return undefined;
    if (marker === undefined) await this.markers.create(jobId, key);
    await this.mailboxes.offer(key, jobId, JSON.stringify(parsed.job));
    return key;
  }

  /** (Migration) Keeps a failed job of an earlier version's partition as a dead letter, listed and retried like any: false when it is damaged or open. */
  async adoptDeadLetter(jobId: string, data: unknown, reason: string): Promise<boolean> {
    const parsed = parseDeliveryJob(data);
    if (!('job' in parsed)) return false;
    const [marker] = await this.markers.read([jobId]);
    if (marker?.state === 'open' || marker?.state === 'done') return false;
    // Counted open for a moment, so that the finish that keeps its data counts it closed again.
    if (marker === undefined) await this.markers.create(jobId, formatDestination(parsed.job.destination));
    else await this.markers.reopen(jobId);
    await this.finish(jobId, 'failed', JSON.stringify(parsed.job), reason);
    return true;
  }

  /** Makes failed deliveries (one by id, or all) pending again at the back of their destination, with a fresh series of attempts. */
  async retryFailed(id: string | undefined): Promise<number> {
    if (id !== undefined) return (await this.retryOne(deliveryJobId(id))) ? 1 : 0;
    let retried = 0;
    // Bounded as the index is (FINISHED_KEPT).
    for (const jobId of await this.options.redis.zrange(this.markers.index('failed'), 0, -1)) if (await this.retryOne(jobId)) retried++;
    return retried;
  }

  async list(filter: { readonly failedOnly?: boolean; readonly chatId?: string; readonly limit: number }): Promise<DeliveryRecord[]> {
    const newest = new Newest<DeliveryRecord>(filter.limit, (a, b) => b.createdAt - a.createdAt || compare(b.id, a.id));
    const keep = (record: DeliveryRecord | undefined): void => {
      if (record !== undefined && (filter.chatId === undefined || record.destination.chatId === filter.chatId)) newest.add(record);
    };
    if (filter.failedOnly !== true) for (const open of await this.open()) keep(openRecord(open.data, open.status));
    for (const state of filter.failedOnly === true ? (['failed'] as const) : (['done', 'failed'] as const)) {
      // Each index is read newest first; once `limit` of it match, older ones cannot make the cut.
      let matched = 0;
      await this.scanFinished(state, (finished) => {
        const record = finishedRecord(finished);
        if (record === undefined || (filter.chatId !== undefined && record.destination.chatId !== filter.chatId)) return true;
        newest.add(record);
        return ++matched < filter.limit;
      });
    }
    return newest.sorted();
  }

  /** From the counters; the oldest open delivery from the heads that moved longest ago, so it costs one script. */
  async pressure(maxOpenPerDestination: number): Promise<OutboxPressure> {
    const { redis, keys } = this.options;
    const [total, counts, heads] = await Promise.all([redis.get(keys.openDeliveriesTotal), redis.hvals(keys.openDeliveries), this.mailboxes.heads(OLDEST_HEADS)]);
    let oldestOpenSince: number | undefined;
    for (const head of heads) {
      const since = (readData(head.data) as Partial<DeliveryJobData> | undefined)?.attemptsSince;
      if (typeof since === 'number' && (oldestOpenSince === undefined || since < oldestOpenSince)) oldestOpenSince = since;
    }
    return {
      open: Math.max(0, Number(total ?? 0)),
      fullDestinations: counts.filter((count) => Number(count) >= maxOpenPerDestination).length,
      oldestOpenSince,
    };
  }

  async overdue(query: OverdueQuery): Promise<DeliveryState[]> {
    const filtered = query.chatId !== undefined || query.threadId !== undefined;
    const newest = new Newest<DeliveryState>(query.limit, (a, b) => b.attemptsSince - a.attemptsSince || compare(b.id, a.id));
    const candidates: DeliveryState[] = [];
    const consider = (state: DeliveryState | undefined): void => {
      if (state === undefined || state.attemptsSince >= query.before) return;
      if (filtered && !destinationMatches(state.destination, query) && !originMatches(state.origin, query)) return;
      candidates.push(state);
    };
    for (const open of await this.open()) consider(toState(openRecord(open.data, open.status)));
    await this.scanFinished('failed', (finished) => {
      consider(toState(finishedRecord(finished)));
      return true;
    });
    for (const state of await this.withoutUnreportedNotices(candidates)) newest.add(state);
    return newest.sorted();
  }

  async states(ids: readonly string[]): Promise<Map<string, DeliveryStatus>> {
    const states = new Map<string, DeliveryStatus>();
    for (let start = 0; start < ids.length; start += MAX_STATE_IDS) {
      const chunk = ids.slice(start, start + MAX_STATE_IDS);
      const markers = await this.markers.read(chunk.map(deliveryJobId));
      await Promise.all(
        chunk.map(async (id, index) => {
          const marker = markers[index];
          if (marker === undefined) return;
          if (marker.state !== 'open') {
            states.set(id, marker.state);
            return;
          }
          states.set(id, (await this.sending(marker.field, deliveryJobId(id))) ? 'sending' : 'pending');
        }),
      );
    }
    return states;
  }

  /** True while `jobId` is the head of `key`'s mailbox and an instance owns it. */
  private async sending(key: string, jobId: string): Promise<boolean> {
    const { redis } = this.options;
    const [head, owned] = await Promise.all([redis.lindex(this.mailboxes.mailbox(key), 0), redis.exists(this.mailboxes.owner(key))]);
    return head === jobId && owned > 0;
  }

  /** Every open delivery, by destination, with the head of a mailbox being drained as 'sending'. */
  private async open(): Promise<Array<{ data: string; status: DeliveryStatus }>> {
    const open: Array<{ data: string; status: DeliveryStatus }> = [];
    for (const key of await this.mailboxes.keysWithWork()) {
      const ids = await this.mailboxes.ids(key);
      const data = await this.mailboxes.read(ids);
      const headSending = ids.length > 0 && (await this.sending(key, ids[0]!));
      data.forEach((each, index) => {
        if (each !== undefined) open.push({ data: each, status: index === 0 && headSending ? 'sending' : 'pending' });
      });
    }
    return open;
  }

  /** The dead letter `jobId` back at the back of its destination's mailbox, with a fresh series of attempts; false when it is none. */
  private async retryOne(jobId: string): Promise<boolean> {
    const [marker] = await this.markers.read([jobId]);
    if (marker?.state !== 'failed') return false;
    const data = await this.options.redis.hget(this.markers.key(jobId), 'd');
    const parsed = parseDeliveryJob(readData(data ?? ''));
    if (!('job' in parsed)) return false;
    // Retried by hand, a refused delivery is sent: the operator decided.
    const { dueAt: _dueAt, lastError: _lastError, refused: _refused, ...rest } = parsed.job;
    const fresh: DeliveryJobData = { ...rest, attempts: 0, attemptsSince: Date.now() };
    // Reopened first: retried by someone else meanwhile, it is not ours to count.
    if (!(await this.markers.reopen(jobId))) return false;
    const key = formatDestination(fresh.destination);
    await this.mailboxes.offer(key, jobId, JSON.stringify(fresh), { again: true });
    await this.wake(key);
    return true;
  }

  /** Visits the finished deliveries in `state`, newest first, a page at a time, while `visit` says go on. */
  private async scanFinished(state: 'done' | 'failed', visit: (record: FinishedRecord) => boolean): Promise<void> {
    for (let start = 0; ; start += PAGE) {
      const { records, more } = await this.markers.finished(state, start, PAGE);
      for (const record of records) if (!visit(record)) return;
      if (!more) return;
    }
  }

  private async withoutUnreportedNotices(states: DeliveryState[]): Promise<DeliveryState[]> {
    const unreported = this.options.processUnreported;
    if (unreported === undefined) return states;
    const kept: DeliveryState[] = [];
    for (const state of states) {
      const process = /^proc:(.+):done$/.exec(state.id)?.[1];
      if (process === undefined || !(await unreported(process))) kept.push(state);
    }
    return kept;
  }
}

/** The context a delivery carries: the active one inside a session (the router's span), else the origin's routing with no span. */
function producerContext(origin: RoutingSnapshot): JobContext {
  return getSession() === undefined ? { routing: origin, carrier: {} } : jobContextOf(undefined, origin);
}

function readData(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

function openRecord(data: string, status: DeliveryStatus): DeliveryRecord | undefined {
  const parsed = parseDeliveryJob(readData(data));
  if (!('job' in parsed)) return undefined;
  const job = parsed.job;
  return { ...deliveryOf(job), status, dueAt: job.dueAt ?? job.attemptsSince, ...(job.lastError === undefined ? {} : { lastError: job.lastError }) };
}

function finishedRecord(finished: FinishedRecord): DeliveryRecord | undefined {
  const parsed = parseDeliveryJob(readData(finished.data));
  if (!('job' in parsed)) return undefined;
  const job = parsed.job;
  const lastError = finished.state === 'failed' ? finished.reason || job.lastError : job.lastError;
  return {
    ...deliveryOf(job),
    status: finished.state,
    dueAt: job.dueAt ?? job.attemptsSince,
    ...(lastError === undefined || lastError === '' ? {} : { lastError }),
    finishedAt: finished.finishedAt,
  };
}

function toState(record: DeliveryRecord | undefined): DeliveryState | undefined {
  if (record === undefined) return undefined;
  const origin = record.origin as unknown;
  return {
    id: record.id,
    kind: record.kind,
    status: record.status,
    destination: formatDestination(record.destination),
    origin: typeof origin === 'object' && origin !== null && (origin as { v?: unknown }).v === 1 ? (origin as RoutingSnapshot) : undefined,
    attempts: record.attempts,
    attemptsSince: record.attemptsSince,
    dueAt: record.dueAt,
    ...(record.lastError === undefined ? {} : { lastError: record.lastError }),
    ...(record.finishedAt === undefined ? {} : { finishedAt: record.finishedAt }),
  };
}

/** As the embedded store matches: the destination's chat, and its thread when one is asked. */
function destinationMatches(destination: string, query: OverdueQuery): boolean {
  const [, chat, thread] = destination.split(':').map((part) => safeDecode(part));
  return (query.chatId === undefined || chat === query.chatId) && (query.threadId === undefined || thread === query.threadId);
}

function originMatches(origin: RoutingSnapshot | undefined, query: OverdueQuery): boolean {
  if (origin === undefined) return false;
  return (query.chatId === undefined || origin.session.chatId === query.chatId) && (query.threadId === undefined || origin.session.threadId === query.threadId);
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The first `limit` of what is added, by `order`, in bounded memory. */
class Newest<T> {
  private items: T[] = [];

  constructor(
    private readonly limit: number,
    private readonly order: (a: T, b: T) => number,
  ) {}

  add(item: T): void {
    this.items.push(item);
    if (this.items.length >= this.limit * 2) this.items = this.sorted();
  }

  sorted(): T[] {
    return this.items.sort(this.order).slice(0, this.limit);
  }
}
