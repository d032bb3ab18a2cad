import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { DeliveryError } from '../../src/errors.js';
import type { OutboundMessage, Platform } from '../../src/platforms/platform.js';
import { getSession, type Session } from '../../src/session/index.js';
import type { NewDelivery } from '../../src/store/store.js';
import { RedisOutbox } from '../../src/queue/redis-outbox.js';
import { RedisOutboxRecords } from '../../src/queue/redis-outbox-records.js';
import type { LeaseTimings } from '../../src/queue/lease-worker-options.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { GatewayMetrics } from '../../src/telemetry/gateway-metrics.js';
import { webhookOrigin } from '../helpers/gateway.js';

/** One send the fake platform saw: which instance, what, and the session active while it sent. */
export interface SeenSend {
  readonly instance: string;
  readonly message: OutboundMessage;
  readonly session: Session | undefined;
  readonly ok: boolean;
}

/**
 * A webhook-named platform shared by the instances of a test: `answer` decides each attempt
 * (undefined: accepted), and it counts sends in flight per chat to catch two at once.
 */
export class FakePlatform {
  readonly seen: SeenSend[] = [];
  /** The most sends to one chat that were in flight at once. */
  maxInFlightPerChat = 0;
  /** Sends in flight now, every chat, and the most there ever were. */
  inFlightTotal = 0;
  maxInFlightTotal = 0;
  /** A send waits for what this returns before it answers (undefined: it does not wait): a platform call held. */
  gate: (message: OutboundMessage) => Promise<void> | undefined = () => undefined;
  answer: (message: OutboundMessage, attempt: number) => DeliveryError | 'hang' | undefined = () => undefined;
  /** Each send takes this long: long enough for a second sender to overlap if the queue let it. */
  delayMs = 2;
  private readonly inFlight = new Map<string, number>();
  private readonly attempts = new Map<string, number>();

  for(instance: string): Platform {
    return {
      name: 'webhook',
      register: () => undefined,
      describe: () => 'fake',
      send: (message, signal) => this.send(instance, message, signal),
    };
  }

  /** The ids of `chatId`'s deliveries the platform accepted, in order. */
  sentTo(chatId: string): string[] {
    return this.seen.filter((send) => send.ok && send.message.destination.chatId === chatId).map((send) => send.message.id);
  }

  private async send(instance: string, message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const chat = message.destination.chatId;
    const attempt = (this.attempts.get(message.id) ?? 0) + 1;
    this.attempts.set(message.id, attempt);
    const inFlight = (this.inFlight.get(chat) ?? 0) + 1;
    this.inFlight.set(chat, inFlight);
    this.maxInFlightPerChat = Math.max(this.maxInFlightPerChat, inFlight);
    this.inFlightTotal++;
    this.maxInFlightTotal = Math.max(this.maxInFlightTotal, this.inFlightTotal);
    this.changed();
    try {
      await this.gate(message);
      const answer = this.answer(message, attempt);
      if (answer === 'hang') {
        await new Promise<void>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      }
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      this.seen.push({ instance, message, session: getSession(), ok: answer === undefined });
      if (answer !== undefined && answer !== 'hang') throw answer;
    } finally {
      this.inFlight.set(chat, (this.inFlight.get(chat) ?? 1) - 1);
      this.inFlightTotal--;
      this.changed();
    }
  }

  /** Resolves once `check` holds, looked at after each change of the sends in flight. */
  when(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ check, resolve }));
  }

  private readonly waiters: Array<{ check: () => boolean; resolve: () => void }> = [];

  private changed(): void {
    for (const waiter of [...this.waiters]) {
      if (!waiter.check()) continue;
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}

export const unavailable = (): DeliveryError => new DeliveryError('webhook answered 503', { retryable: true });
export const refused = (): DeliveryError => new DeliveryError('webhook answered 400', { retryable: false });

/** A delivery to webhook chat `chatId`, made in that chat. */
export function delivery(id: string, chatId: string, createdAt = Date.now()): NewDelivery {
  return { id, kind: 'reply', destination: { platform: 'webhook', chatId }, text: `text of ${id}`, origin: webhookOrigin(chatId, `tl_${chatId}`), createdAt };
}

export interface Instance {
  readonly name: string;
  readonly records: RedisOutboxRecords;
  readonly outbox: RedisOutbox;
  readonly redis: Redis;
  readonly queue: Queue;
  close(): Promise<void>;
  /** Drops every connection of this instance without a word to Redis: a process killed with -9. */
  kill(): void;
}

export interface InstanceOptions {
  readonly url: string;
  readonly prefix: string;
  readonly platform: FakePlatform;
  readonly name?: string;
  /** Sends this instance runs at once (the outbox's maxInFlight); default 10. */
  readonly slots?: number;
  readonly maxAttempts?: number;
  readonly giveUpAfterMs?: number;
  readonly work?: boolean;
  /** The drain jobs' lock and stalled check (short ones to see a killed instance's work move on). */
  readonly lease?: LeaseTimings;
  /** THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS; default 1 s. */
  readonly maxRetryAfterMs?: number;
  /** The partition count an earlier version recorded: its `deliveries-<p>` queues are moved in at start. */
  readonly legacyPartitions?: number;
}

/** An instance of the distributed outbox on the test Redis: its connections, records and workers. */
export function instance(options: InstanceOptions): Instance {
  const name = options.name ?? 'a';
  const opened: Redis[] = [];
  const connect = (): Redis => {
    const client = new Redis(options.url, { maxRetriesPerRequest: null });
    // BullMQ duplicates the worker connection for its blocking fetch: tracked, so kill() drops it too.
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const copy = duplicate(...args);
      opened.push(copy);
      return copy;
    };
    opened.push(client);
    return client;
  };
  const redis = new Redis(options.url);
  opened.push(redis);
  const keys = new RedisKeys(options.prefix);
  const queue = new Queue(keys.deliveriesQueue, { connection: redis, prefix: keys.queuePrefix });
  const records = new RedisOutboxRecords({ redis, queue, keys, deadLetterRetentionMs: 60_000 });
  const outbox = new RedisOutbox({
    parts: {
      platforms: new Map([['webhook', options.platform.for(name)]]),
      options: {
        maxAttempts: options.maxAttempts ?? 5,
        giveUpAfterMs: options.giveUpAfterMs ?? 60_000,
        backoff: { baseMs: 5, maxMs: 20, maxRetryAfterMs: options.maxRetryAfterMs ?? 1_000 },
        maxInFlight: options.slots ?? 10,
        leaseMs: 30_000,
      },
      logger: pino({ level: 'silent' }),
      metrics: new GatewayMetrics(),
    },
    records,
    connect,
    work: options.work ?? true,
    ...options.lease,
    ...(options.legacyPartitions === undefined ? {} : { legacyPartitions: options.legacyPartitions }),
  });
  let closed = false;
  return {
    name,
    records,
    outbox,
    redis,
    queue,
    close: async () => {
      if (closed) return;
      closed = true;
      await outbox.stop(Date.now() + 5_000);
      await queue.close();
      await redis.quit().catch(() => undefined);
    },
    kill: () => {
      closed = true;
      for (const client of opened) {
        client.on('error', () => undefined);
        client.disconnect();
      }
    },
  };
}
