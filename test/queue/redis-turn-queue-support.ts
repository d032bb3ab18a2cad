import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { RedisTurnQueue, type RedisTurnQueueOptions } from '../../src/queue/redis-turn-queue.js';
import { captureRouting, contextWithSession, createSession, sessionIdOfKey, sessionKey, withSessionId, type SessionInput } from '../../src/session/index.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import type { RunTurn, TurnJob } from '../../src/gateway/turn-queue.js';

/** What a test's turns saw: each turn as it started, by instance. */
export interface Seen {
  readonly instance: string;
  readonly job: TurnJob;
  readonly signal: AbortSignal;
}

/** Waiters on the turns seen, woken each time a turn starts or ends: the deterministic signal tests wait on. */
let waiters: (() => void)[] = [];
export function notify(): void {
  for (const wake of waiters.splice(0)) wake();
}
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise<void>((resolve) => waiters.push(resolve));
}

/**
 * A run function for instance `instance` that records each turn and ends its span (as the
 * gateway's does). `hold(job)` returning a promise keeps that turn running until it settles.
 */
export function recorder(seen: Seen[], instance: string, hold?: (job: TurnJob, signal: AbortSignal) => Promise<void> | undefined): RunTurn {
  return async (job, signal) => {
    seen.push({ instance, job, signal });
    notify();
    try {
      await hold?.(job, signal);
    } finally {
      job.span.end();
    }
  };
}

/** A resolvable promise. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export interface Instance {
  readonly queue: RedisTurnQueue;
  /** Drops every connection of this instance without a word to Redis: a process killed with -9. */
  kill(): void;
}

/** A gateway instance's turn queue, with connections of its own; `cleanups` closes it after the test. */
export function turnQueueInstance(
  url: string,
  prefix: string,
  cleanups: (() => Promise<void>)[],
  options: Partial<RedisTurnQueueOptions> = {},
  log?: string[],
): Instance {
  const opened: Redis[] = [];
  const connection = (): Redis => {
    const client = new Redis(url, { maxRetriesPerRequest: null });
    // BullMQ duplicates the worker connection for its blocking fetch: tracked, so kill() drops it too.
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const copy = duplicate(...args);
      opened.push(copy);
      return copy;
    };
    client.on('error', () => undefined);
    opened.push(client);
    return client;
  };
  const logger = pino({ level: log === undefined ? 'silent' : 'warn' }, {
    write: (line: string) => {
      log?.push(line);
      notify();
    },
  });
  const queue = new RedisTurnQueue({ connection, keys: new RedisKeys(prefix), concurrency: 8, work: true, logger, ...options });
  cleanups.push(async () => {
    await queue.close('the test is over');
    for (const client of opened) client.disconnect();
  });
  return {
    queue,
    kill: () => {
      for (const client of opened) {
        client.on('error', () => undefined);
        client.disconnect();
      }
    },
  };
}

const tracer = trace.getTracer('threadline-test');

/** A chat's session as the gateway builds it, and its key. */
export function sessionOf(chatId: string, changes: Partial<SessionInput> = {}) {
  const routing = createSession({ platform: 'telegram', chatType: 'group', chatId, threadId: '7', userId: 'u-1', ...changes });
  const key = sessionKey({ platform: routing.platform, chatType: routing.chatType, chatId: routing.chatId, threadId: routing.threadId, userId: undefined });
  return { session: withSessionId(routing, sessionIdOfKey(key, 0)), key };
}

/** A message as the gateway offers it: session entered, gateway.message span active. */
export function turnJob(chatId: string, id: string, text = `text of ${id}`): TurnJob {
  const { session, key } = sessionOf(chatId);
  const entered = contextWithSession(ROOT_CONTEXT, session);
  const span = tracer.startSpan('gateway.message', { kind: SpanKind.SERVER }, entered);
  const context = trace.setSpan(entered, span);
  return { id, sessionId: session.sessionId, session, key, text, context, span, routing: captureRouting(context) };
}

/** The messages of each session in the order its turns ran. */
export function orderBySession(seen: readonly Seen[]): Map<string, string[]> {
  const order = new Map<string, string[]>();
  for (const { job } of seen) order.set(job.session.chatId, [...(order.get(job.session.chatId) ?? []), job.id]);
  return order;
}

/**
 * Counts the turns running per conversation and at once across every instance: `overlaps`
 * names each turn that started while another of its conversation ran (must stay empty).
 */
export class RunningTurns {
  readonly overlaps: string[] = [];
  maxAtOnce = 0;
  private readonly perChat = new Map<string, number>();
  private total = 0;

  /** Call as a turn starts; the returned function as it ends. */
  enter(job: TurnJob): () => void {
    const chat = job.session.chatId;
    const running = (this.perChat.get(chat) ?? 0) + 1;
    if (running > 1) this.overlaps.push(job.id);
    this.perChat.set(chat, running);
    this.total++;
    this.maxAtOnce = Math.max(this.maxAtOnce, this.total);
    notify();
    return () => {
      this.perChat.set(chat, this.perChat.get(chat)! - 1);
      this.total--;
      notify();
    };
  }

  get now(): number {
    return this.total;
  }
}
