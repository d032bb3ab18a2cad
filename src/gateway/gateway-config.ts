import { ConfigError } from '../errors.js';
import { envFlag, envInteger, envOneOf, envString, envUrl } from '../env-vars.js';

export interface TelegramConfig {
  readonly token: string;
  readonly mode: 'webhook' | 'polling';
  readonly webhookSecret: string | undefined;
  readonly apiRoot: string;
}

export interface SlackConfig {
  readonly botToken: string;
  readonly signingSecret: string;
  readonly apiUrl: string;
  readonly threadTopLevel: boolean;
}

export interface GatewayConfig {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly webhook: { readonly token: string | undefined; readonly deliveryUrl: string | undefined };
  /** Present when THREADLINE_TELEGRAM_BOT_TOKEN is set. */
  readonly telegram: TelegramConfig | undefined;
  /** Present when THREADLINE_SLACK_BOT_TOKEN is set. */
  readonly slack: SlackConfig | undefined;
  readonly concurrency: number;
  readonly queueCapacity: number;
  readonly perUserGroupSessions: boolean;
  readonly strictRouting: boolean;
  readonly deliveryMaxAttempts: number;
  readonly deliveryBackoffMs: number;
  readonly deliveryBackoffMaxMs: number;
  readonly deliveryMaxRetryAfterMs: number;
  readonly deliveryGiveUpMs: number;
  readonly deliveryLeaseMs: number;
  readonly outboxMaxPerChat: number;
  readonly outboxMaxPending: number;
  readonly deadLetterRetentionMs: number;
  readonly webhookIdempotencyMs: number;
  readonly shutdownTimeoutMs: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

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
    telegram: telegramConfig(env),
    slack: slackConfig(env),
    concurrency: envInteger(env, 'THREADLINE_CONCURRENCY', 64, 1, 10_000),
    queueCapacity: envInteger(env, 'THREADLINE_QUEUE_CAPACITY', 10_000, 1, 10_000_000),
    perUserGroupSessions: envOneOf(env, 'THREADLINE_GROUP_SESSIONS', ['shared', 'per-user'], 'shared') === 'per-user',
    strictRouting: envFlag(env, 'THREADLINE_STRICT_ROUTING'),
    deliveryMaxAttempts: envInteger(env, 'THREADLINE_DELIVERY_MAX_ATTEMPTS', 10, 1, 1000),
    deliveryBackoffMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MS', 500, 1, 3_600_000),
    deliveryBackoffMaxMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MAX_MS', 300_000, 1, 86_400_000),
    deliveryMaxRetryAfterMs: envInteger(env, 'THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS', HOUR_MS, 0, 7 * DAY_MS),
    deliveryGiveUpMs: envInteger(env, 'THREADLINE_DELIVERY_GIVE_UP_MS', DAY_MS, 1, 30 * DAY_MS),
    deliveryLeaseMs: envInteger(env, 'THREADLINE_DELIVERY_LEASE_MS', 60_000, 100, HOUR_MS),
    outboxMaxPerChat: envInteger(env, 'THREADLINE_OUTBOX_MAX_PER_CHAT', 1_000, 1, 10_000_000),
    outboxMaxPending: envInteger(env, 'THREADLINE_OUTBOX_MAX_PENDING', 100_000, 1, 100_000_000),
    deadLetterRetentionMs: envInteger(env, 'THREADLINE_DEAD_LETTER_RETENTION_MS', 7 * DAY_MS, 0, 365 * DAY_MS),
    webhookIdempotencyMs: envInteger(env, 'THREADLINE_WEBHOOK_IDEMPOTENCY_MS', DAY_MS, 1, 30 * DAY_MS),
    shutdownTimeoutMs: envInteger(env, 'THREADLINE_SHUTDOWN_TIMEOUT_MS', 30_000, 0, 3_600_000),
  };
}

function telegramConfig(env: NodeJS.ProcessEnv): TelegramConfig | undefined {
  const token = envString(env, 'THREADLINE_TELEGRAM_BOT_TOKEN');
  if (token === undefined) return undefined;
  const mode = envOneOf(env, 'THREADLINE_TELEGRAM_MODE', ['webhook', 'polling'], 'webhook');
  const webhookSecret = envString(env, 'THREADLINE_TELEGRAM_WEBHOOK_SECRET');
  if (mode === 'webhook' && webhookSecret === undefined) {
    throw new ConfigError(
      'THREADLINE_TELEGRAM_WEBHOOK_SECRET',
      'is required in webhook mode: pass the same value as secret_token to setWebhook, or set THREADLINE_TELEGRAM_MODE=polling',
    );
  }
  return {
    token,
    mode,
    webhookSecret,
    apiRoot: envUrl(env, 'THREADLINE_TELEGRAM_API_ROOT')?.replace(/\/$/, '') ?? 'https://api.telegram.org',
  };
}

function slackConfig(env: NodeJS.ProcessEnv): SlackConfig | undefined {
  const botToken = envString(env, 'THREADLINE_SLACK_BOT_TOKEN');
  if (botToken === undefined) return undefined;
  const signingSecret = envString(env, 'THREADLINE_SLACK_SIGNING_SECRET');
  if (signingSecret === undefined) {
    throw new ConfigError('THREADLINE_SLACK_SIGNING_SECRET', "is required with a Slack bot token: copy it from the app's Basic Information page");
  }
  return {
    botToken,
    signingSecret,
    apiUrl: envUrl(env, 'THREADLINE_SLACK_API_URL') ?? 'https://slack.com/api/',
    threadTopLevel: envFlag(env, 'THREADLINE_SLACK_THREAD_TOP_LEVEL'),
  };
}
