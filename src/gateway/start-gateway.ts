import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Agent } from '../agent/agent.js';
import { ThreadlineError, messageOf } from '../errors.js';
import { EchoAgent } from '../agent/echo-agent.js';
import type { Platform } from '../platforms/platform.js';
import { SlackPlatform } from '../platforms/slack/slack-platform.js';
import { TelegramPlatform } from '../platforms/telegram/telegram-platform.js';
import { WebhookPlatform } from '../platforms/webhook/webhook-platform.js';
import { acquireDataDirLock } from '../store/data-dir-lock.js';
import { DONE_RETENTION_MS, SqliteStore } from '../store/sqlite-store.js';
import type { Store } from '../store/store.js';
import { Gateway } from './gateway.js';
import type { GatewayConfig } from './gateway-config.js';
import { buildServer } from './server.js';
import { stopGateway } from './stop-gateway.js';

export interface RunningGateway {
  readonly url: string;
  readonly gateway: Gateway;
  readonly server: FastifyInstance;
  readonly platforms: readonly Platform[];
  /** Stops intake, finishes work, closes the server and store, all within the shutdown timeout (see stopGateway). */
  stop(): Promise<void>;
}

export interface GatewayParts {
  readonly logger: Logger;
  /** Default: SQLite in the data dir. */
  readonly store?: Store;
  /** Default: EchoAgent. */
  readonly agent?: Agent;
}

/**
 * Builds and starts the whole gateway from its configuration. The data dir's lock comes
 * first, so a second gateway on it stops before touching anything; the server listens
 * before anything is replayed, so a port in use fails before a delivery is sent again.
 */
export async function startGateway(config: GatewayConfig, parts: GatewayParts): Promise<RunningGateway> {
  if (config.unauthenticatedOffLoopback) {
    parts.logger.warn(
      { host: config.host },
      'webhook intake takes messages with no token on a non-loopback HOST (THREADLINE_ALLOW_UNAUTHENTICATED=1): ' +
        'set THREADLINE_WEBHOOK_TOKEN unless something in front authenticates callers',
    );
  }
  if (parts.store !== undefined) return assemble(config, parts, parts.store, () => {});
  const lock = acquireDataDirLock(config.dataDir);
  let store: Store | undefined;
  try {
    store = await SqliteStore.open(join(config.dataDir, 'threadline.db'), {
      doneMs: DONE_RETENTION_MS,
      failedMs: config.deadLetterRetentionMs,
    });
    return await assemble(config, parts, store, () => lock.release());
  } catch (error) {
    // A start that failed (a port in use, say) must not leave the store open.
    await store?.close().catch(() => {});
    lock.release();
    throw error;
  }
}

async function assemble(config: GatewayConfig, parts: GatewayParts, store: Store, unlock: () => void): Promise<RunningGateway> {
  const { logger } = parts;
  const platforms: Platform[] = [new WebhookPlatform({ ...config.webhook, idempotencyTtlMs: config.webhookIdempotencyMs, logger, keepBaggage: config.inboundBaggage })];
  if (config.telegram !== undefined) platforms.push(new TelegramPlatform({ ...config.telegram, logger, keepBaggage: config.inboundBaggage }));
  if (config.slack !== undefined) platforms.push(new SlackPlatform({ ...config.slack, logger, keepBaggage: config.inboundBaggage }));
  const gateway = new Gateway({
    store,
    platforms,
    agent: parts.agent ?? new EchoAgent(),
    logger,
    concurrency: config.concurrency,
    queueCapacity: config.queueCapacity,
    perUserGroupSessions: config.perUserGroupSessions,
    strictRouting: config.strictRouting,
    admins: config.admins,
    outbox: {
      maxAttempts: config.deliveryMaxAttempts,
      giveUpAfterMs: config.deliveryGiveUpMs,
      backoff: { baseMs: config.deliveryBackoffMs, maxMs: config.deliveryBackoffMaxMs, maxRetryAfterMs: config.deliveryMaxRetryAfterMs },
      maxInFlight: config.concurrency,
      leaseMs: config.deliveryLeaseMs,
      maxOpenPerDestination: config.outboxMaxPerChat,
      maxOpenTotal: config.outboxMaxPending,
    },
  });
  const server = buildServer(gateway, platforms, logger, config.http);
  const address = await server.listen({ port: config.port, host: config.host }).catch((error: unknown) => {
    const code = (error as { code?: unknown } | null)?.code;
    throw new ThreadlineError('TL_LISTEN_FAILED', `Cannot listen on ${config.host}:${config.port} (${String(code ?? messageOf(error))}): stop what holds the port, or set PORT or HOST`, {
      cause: error,
    });
  });
  try {
    await gateway.start();
  } catch (error) {
    // The outbox's loop may be running already: stopped, it no longer knocks on a closed store.
    await gateway.stop(0).catch(() => {});
    await server.close();
    throw error;
  }
  for (const platform of platforms) platform.start?.(gateway);
  return {
    url: address,
    gateway,
    server,
    platforms,
    stop: () => stopGateway({ platforms, gateway, server, store }, config.shutdownTimeoutMs, logger).finally(unlock),
  };
}
