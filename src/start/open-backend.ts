import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RedisConfig } from '../gateway/gateway-config.js';
import type { RedisBackend } from '../queue/redis-backend.js';
import { DONE_RETENTION_MS, SqliteStore } from '../store/sqlite-store.js';
import { STORE_FILE } from '../store/store-file.js';
import type { AnyStore } from '../store/store.js';

/** Where the gateway keeps its work: the data dir's SQLite file, or Redis when THREADLINE_REDIS_URL is set. */
export interface BackendSettings {
  readonly dataDir: string;
  readonly redis?: RedisConfig | undefined;
  /** THREADLINE_DEAD_LETTER_RETENTION_MS: how long a failed delivery is kept. */
  readonly deadLetterRetentionMs: number;
  /** THREADLINE_CONCURRENCY: turns this instance runs at once (the gateway's; the CLI runs none). */
  readonly concurrency?: number | undefined;
}

/** The store, and on Redis also the queues, heartbeat and leases every instance shares. */
export type Backend =
  | { readonly kind: 'sqlite'; readonly store: SqliteStore }
  | { readonly kind: 'redis'; readonly store: AnyStore; readonly redis: RedisBackend };

/**
 * Opens the backend the settings name: the one place each backend is built, for the gateway
 * and the CLI alike, so both see the same store with the same rules. Closing its store closes
 * everything it opened.
 */
export async function openBackend(settings: BackendSettings, logger: Logger): Promise<Backend> {
  if (settings.redis !== undefined) {
    // Loaded only here: an embedded gateway never pays for BullMQ and ioredis.
    const { openRedisBackend } = await import('../queue/redis-backend.js');
    const redis = await openRedisBackend(settings.redis, { logger, deadLetterRetentionMs: settings.deadLetterRetentionMs, concurrency: settings.concurrency });
    return { kind: 'redis', store: redis.store, redis };
  }
  const store = await SqliteStore.open(join(settings.dataDir, STORE_FILE), {
    doneMs: DONE_RETENTION_MS,
    failedMs: settings.deadLetterRetentionMs,
  });
  return { kind: 'sqlite', store };
}
