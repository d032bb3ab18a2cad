import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CommanderError } from 'commander';
import { readInteger, readText } from '../config/read-setting.js';
import { ThreadlineError } from '../errors.js';
import type { OutboxRecords, Store } from '../store/store.js';
import type { CliIo } from './io.js';

/** Opens the existing store (never creates one), runs `use`, closes it; failures exit 1. */
export async function withStore<T>(dataDir: string | undefined, io: CliIo, use: (store: Store) => Promise<T>): Promise<T> {
  const path = resolve(dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'), 'threadline.db');
  if (!existsSync(path)) {
    fail(io, `No store at ${path}: pass --data-dir or set THREADLINE_DATA_DIR to the gateway's data directory [TL_STORE_FAILED]`);
  }
  // Loaded here, so `start` loads nothing of the store before the telemetry bootstrap.
  const { SqliteStore } = await import('../store/sqlite-store.js');
  let store: Store;
  try {
    store = await SqliteStore.open(path);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  try {
    return await use(store);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  } finally {
    await store.close();
  }
}

/**
 * Runs `use` on the outbox the gateway sends from: the shared one on Redis when
 * THREADLINE_REDIS_URL is set (the data dir is then not read), else the data dir's store.
 */
export async function withOutbox<T>(dataDir: string | undefined, io: CliIo, use: (outbox: OutboxRecords) => Promise<T>): Promise<T> {
  // Loaded here, like the store: the Redis client and BullMQ only when asked for.
  const { readRedisConfig } = await import('../gateway/gateway-config.js');
  let redis: ReturnType<typeof readRedisConfig>;
  try {
    redis = readRedisConfig(io.env);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  if (redis === undefined) return withStore(dataDir, io, (store) => use(store.outbox));
  let deadLetterRetentionMs: number;
  try {
    // Read before connecting: a bad setting is one line, and no connection is left open.
    deadLetterRetentionMs = readInteger(io.env, 'THREADLINE_DEAD_LETTER_RETENTION_MS');
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  const [{ connectRedis }, { RedisKeys }, { DeliveryQueues }, { RedisOutboxRecords }] = await Promise.all([
    import('../store/redis/redis-connection.js'),
    import('../store/redis/redis-keys.js'),
    import('../queue/delivery-queues.js'),
    import('../queue/redis-outbox-records.js'),
  ]);
  let connection: Awaited<ReturnType<typeof connectRedis>>;
  try {
    connection = await connectRedis(redis.url);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  const keys = new RedisKeys(redis.prefix);
  const queues = new DeliveryQueues(connection, keys, redis.partitions);
  const records = new RedisOutboxRecords({
    redis: connection,
    queue: (index) => queues.queue(index),
    keys,
    partitions: redis.partitions,
    deadLetterRetentionMs,
  });
  try {
    return await use(records);
  } catch (error) {
    if (error instanceof CommanderError) throw error;
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    // A failed command names neither the URL nor its password: only what Redis said.
    const { redisFailure } = await import('../store/redis/redis-connection.js');
    const failure = redisFailure(error);
    fail(io, `${failure.message} [${failure.code}]`);
  } finally {
    await queues.close();
    connection.disconnect();
  }
}

/** Exit 1 with one line; command.error() would also suggest --help, which cannot help here. */
export function fail(io: CliIo, message: string): never {
  io.err(`threadline: ${message}\n`);
  throw new CommanderError(1, 'threadline.failed', message);
}
