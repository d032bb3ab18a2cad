import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CommanderError } from 'commander';
import pino from 'pino';
import { readInteger, readText } from '../config/read-setting.js';
import { ThreadlineError } from '../errors.js';
import type { RedisConfig } from '../gateway/gateway-config.js';
import { STORE_FILE } from '../store/store-file.js';
import type { Backend } from '../start/open-backend.js';
import type { AnyStore, OutboxRecords, Store } from '../store/store.js';
import type { CliIo } from './io.js';

/** Opens the existing store (never creates one), runs `use`, closes it; failures exit 1. */
export async function withStore<T>(dataDir: string | undefined, io: CliIo, use: (store: Store) => Promise<T>): Promise<T> {
  const dir = resolve(dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'));
  const path = resolve(dir, STORE_FILE);
  if (!existsSync(path)) {
    fail(io, `No store at ${path}: pass --data-dir or set THREADLINE_DATA_DIR to the gateway's data directory [TL_STORE_FAILED]`);
  }
  return withBackend(io, dir, undefined, (backend) => {
    if (backend.kind !== 'sqlite') throw new Error('a backend without Redis settings is the data dir\'s store');
    return use(backend.store);
  });
}

/**
 * Runs `use` on the outbox the gateway sends from: the shared one on Redis when
 * THREADLINE_REDIS_URL is set (the data dir is then not read), else the data dir's store.
 */
export async function withOutbox<T>(dataDir: string | undefined, io: CliIo, use: (outbox: OutboxRecords) => Promise<T>): Promise<T> {
  // Loaded here, like the store: the Redis client and BullMQ only when asked for.
  const { readRedisConfig } = await import('../gateway/gateway-config.js');
  const redis = orFail(io, () => readRedisConfig(io.env));
  if (redis === undefined) return withStore(dataDir, io, (store) => use(store.outbox));
  return withBackend(io, resolve(dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR')), redis, (backend) => use(backend.store.outbox));
}

/** Runs `use` on the store the gateway keeps its state in: the shared one on Redis when THREADLINE_REDIS_URL is set, else the data dir's. */
export async function withGatewayStore<T>(dataDir: string | undefined, io: CliIo, use: (store: AnyStore) => Promise<T>): Promise<T> {
  const { readRedisConfig } = await import('../gateway/gateway-config.js');
  const redis = orFail(io, () => readRedisConfig(io.env));
  if (redis === undefined) return withStore(dataDir, io, use);
  return withBackend(io, resolve(dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR')), redis, (backend) => use(backend.store));
}

/** Opens the backend as the gateway does (openBackend), runs `use`, closes it; failures exit 1. */
async function withBackend<T>(io: CliIo, dataDir: string, redis: RedisConfig | undefined, use: (backend: Backend) => Promise<T>): Promise<T> {
  // Read before connecting: a bad setting is one line, and no connection is left open.
  const deadLetterRetentionMs = orFail(io, () => readInteger(io.env, 'THREADLINE_DEAD_LETTER_RETENTION_MS'));
  // Loaded here, so `start` loads nothing of the store before the telemetry bootstrap.
  const { openBackend } = await import('../start/open-backend.js');
  let backend: Backend;
  try {
    // The backend's own warnings (a Redis setting to look at) are for the gateway's log, not a command's output.
    backend = await openBackend({ dataDir, redis, deadLetterRetentionMs }, pino({ level: 'silent' }));
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  try {
    return await use(backend);
  } catch (error) {
    if (error instanceof CommanderError) throw error;
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    if (redis === undefined) throw error;
    // A failed command names neither the URL nor its password: only what Redis said.
    const { redisFailure } = await import('../store/redis/redis-connection.js');
    const failure = redisFailure(error);
    fail(io, `${failure.message} [${failure.code}]`);
  } finally {
    await backend.store.close();
  }
}

/** `read()`, or exit 1 with the configuration error it threw. */
export function orFail<T>(io: CliIo, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
}

/** Exit 1 with one line; command.error() would also suggest --help, which cannot help here. */
export function fail(io: CliIo, message: string): never {
  io.err(`threadline: ${message}\n`);
  throw new CommanderError(1, 'threadline.failed', message);
}
