import { envFlag, envInteger, envOneOf, envString, envUrl } from '../env-vars.js';

export interface GatewayConfig {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly webhook: { readonly token: string | undefined; readonly deliveryUrl: string | undefined };
  readonly concurrency: number;
  readonly queueCapacity: number;
  readonly perUserGroupSessions: boolean;
  readonly strictRouting: boolean;
  readonly deliveryMaxAttempts: number;
  readonly deliveryBackoffMs: number;
  readonly deliveryBackoffMaxMs: number;
  readonly shutdownTimeoutMs: number;
}

/** The gateway's configuration, read once at start-up; every variable is in the README. */
export function readGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return {
    port: envInteger(env, 'PORT', 8787, 0, 65535),
    host: envString(env, 'HOST') ?? '127.0.0.1',
    dataDir: envString(env, 'THREADLINE_DATA_DIR') ?? './data',
    webhook: {
      token: envString(env, 'THREADLINE_WEBHOOK_TOKEN'),
      deliveryUrl: envUrl(env, 'THREADLINE_WEBHOOK_DELIVERY_URL'),
    },
    concurrency: envInteger(env, 'THREADLINE_CONCURRENCY', 64, 1, 10_000),
    queueCapacity: envInteger(env, 'THREADLINE_QUEUE_CAPACITY', 10_000, 1, 10_000_000),
    perUserGroupSessions: envOneOf(env, 'THREADLINE_GROUP_SESSIONS', ['shared', 'per-user'], 'shared') === 'per-user',
    strictRouting: envFlag(env, 'THREADLINE_STRICT_ROUTING'),
    deliveryMaxAttempts: envInteger(env, 'THREADLINE_DELIVERY_MAX_ATTEMPTS', 10, 1, 1000),
    deliveryBackoffMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MS', 500, 1, 3_600_000),
    deliveryBackoffMaxMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MAX_MS', 300_000, 1, 86_400_000),
    shutdownTimeoutMs: envInteger(env, 'THREADLINE_SHUTDOWN_TIMEOUT_MS', 30_000, 0, 3_600_000),
  };
}
