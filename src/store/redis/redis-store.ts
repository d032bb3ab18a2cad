import type { Redis } from 'ioredis';
import type { CallResults, Conversations, HistoryLog, HomeChannels, MessageLog, OutboxRecords, ProcessTable, ScheduleTable, Store, SyncTokens } from '../store.js';
import { redisCallResults } from './redis-calls.js';
import { redisConversations } from './redis-conversations.js';
import { redisHistoryLog } from './redis-history.js';
import { redisHomeChannels } from './redis-homes.js';
import type { RedisKeys } from './redis-keys.js';
import { redisMessageLog } from './redis-messages.js';
import { redisProcessTable, type NoticeStates } from './redis-processes.js';
import { redisScheduleTable } from './redis-schedules.js';
import { guarded } from './redis-scripts.js';
import { redisSyncTokens } from './redis-sync-tokens.js';

/** What a RedisStore is made of; it owns none of it but `close`. */
export interface RedisStoreParts {
  /** A connection for commands (not BullMQ's blocking one); the store does not close it. */
  readonly redis: Redis;
  readonly keys: RedisKeys;
  /** The outbox's records on the delivery queues. */
  readonly outbox: OutboxRecords;
  /** The full state of completion notices, for ProcessTable.unreported; without it a notice's status alone is read. */
  readonly noticeStates?: NoticeStates;
  /** Run by close(): what the caller wants released with the store. */
  readonly close?: () => Promise<void>;
}

/**
 * The shared store of several gateway instances: every table on one Redis under the keys'
 * prefix, each check-and-write one Lua script so instances writing at once keep the same
 * contract as the embedded SQLite store. Memory is bounded as SQLite bounds it: completed
 * messages are deleted, idempotency keys and idle histories expire, histories are trimmed,
 * processes and schedules are capped.
 */
export class RedisStore implements Store<OutboxRecords> {
  readonly messages: MessageLog;
  readonly outbox: OutboxRecords;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;
  readonly processes: ProcessTable;
  readonly schedules: ScheduleTable;
  readonly history: HistoryLog;
  readonly calls: CallResults;
  readonly location: string;
  readonly syncTokens: SyncTokens;
  private closing: Promise<void> | undefined;

  private constructor(private readonly parts: RedisStoreParts) {
    const { redis, keys, outbox } = parts;
    this.outbox = outbox;
    this.messages = redisMessageLog(redis, keys);
    this.homes = redisHomeChannels(redis, keys);
    this.conversations = redisConversations(redis, keys);
    this.processes = redisProcessTable(redis, keys, outbox, parts.noticeStates);
    this.schedules = redisScheduleTable(redis, keys);
    this.history = redisHistoryLog(redis, keys);
    this.calls = redisCallResults(redis, keys);
    // The URL may hold a password: the prefix says which deployment's keys these are.
    this.location = `Redis, keys under ${keys.prefix}:`;
    this.syncTokens = redisSyncTokens(redis, keys);
  }

  /** A store on `parts.redis`; nothing is read until a table is used. */
  static open(parts: RedisStoreParts): RedisStore {
    return new RedisStore(parts);
  }

  /** Sets a key of its own (expiring in a minute): refused as any write is, by a Redis out of memory say. */
  async probeWrite(): Promise<void> {
    await guarded(this.parts.redis.set(this.parts.keys.key('ready-probe'), String(Date.now()), 'PX', 60_000));
  }

  /** Runs `parts.close` once, however often it is called. */
  close(): Promise<void> {
    this.closing ??= this.parts.close?.() ?? Promise.resolve();
    return this.closing;
  }
}
