import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../errors.js';
import { envFlag, envInteger, envOneOf, envString, envUrl } from '../env-vars.js';
import { Admins } from '../agent/admins.js';
import { parseKeepBaggage, type KeepBaggage } from '../session/index.js';

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
  /** THREADLINE_ADMINS: who may run admin commands (/sethome); unset, nobody. */
  readonly admins: Admins;
  /** THREADLINE_INBOUND_BAGGAGE: the foreign inbound baggage every platform keeps; default none. */
  readonly inboundBaggage: KeepBaggage;
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
  /** What one HTTP client may hold, and for how long. */
  readonly http: HttpLimits;
  /** HOST is off loopback, no webhook token, and THREADLINE_ALLOW_UNAUTHENTICATED=1 accepts that: start-up warns. */
  readonly unauthenticatedOffLoopback: boolean;
}

/** Bounds on HTTP clients, so a slow, silent or numerous one cannot hold the gateway. */
export interface HttpLimits {
  /** The whole request, body included, must arrive within this of its first byte. */
  readonly requestTimeoutMs: number;
  /** A request's headers must arrive within this of its first byte (of the connection, for a new one). */
  readonly headersTimeoutMs: number;
  /** A kept-alive connection idle this long is closed. */
  readonly keepAliveTimeoutMs: number;
  /** Connections open at once; one more is closed as soon as it is accepted. */
  readonly maxConnections: number;
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
    admins: Admins.parse(envString(env, 'THREADLINE_ADMINS')),
    inboundBaggage: parseKeepBaggage(env['THREADLINE_INBOUND_BAGGAGE']),
    concurrency: envInteger(env, 'THREADLINE_CONCURRENCY', 64, 1, 10_000),
    queueCapacity: envInteger(env, 'THREADLINE_QUEUE_CAPACITY', 10_000, 1, 10_000_000),
    perUserGroupSessions: envOneOf(env, 'THREADLINE_GROUP_SESSIONS', ['shared', 'per-user'], 'shared') === 'per-user',
    strictRouting: envFlag(env, 'THREADLINE_STRICT_ROUTING'),
    deliveryMaxAttempts: envInteger(env, 'THREADLINE_DELIVERY_MAX_ATTEMPTS', 10, 1, 1000),
    deliveryBackoffMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MS', 500, 1, 3_600_000),
    deliveryBackoffMaxMs: envInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MAX_MS', 300_000, 1, 86_400_000),
    deliveryMaxRetryAfterMs: envInteger(env, 'THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS', HOUR_MS, 0, 7 * DAY_MS),
    deliveryGiveUpMs: envInteger(env, 'THREADLINE_DELIVERY_GIVE_UP_MS', DAY_MS, 1, 30 * DAY_MS),
    // At least 15 s: longer than a send may take (10 s), so a send under way is not claimed twice.
    deliveryLeaseMs: envInteger(env, 'THREADLINE_DELIVERY_LEASE_MS', 60_000, 15_000, HOUR_MS),
    outboxMaxPerChat: envInteger(env, 'THREADLINE_OUTBOX_MAX_PER_CHAT', 1_000, 1, 10_000_000),
    outboxMaxPending: envInteger(env, 'THREADLINE_OUTBOX_MAX_PENDING', 100_000, 1, 100_000_000),
    deadLetterRetentionMs: envInteger(env, 'THREADLINE_DEAD_LETTER_RETENTION_MS', 7 * DAY_MS, 0, 365 * DAY_MS),
    webhookIdempotencyMs: envInteger(env, 'THREADLINE_WEBHOOK_IDEMPOTENCY_MS', DAY_MS, 1, 30 * DAY_MS),
    shutdownTimeoutMs: envInteger(env, 'THREADLINE_SHUTDOWN_TIMEOUT_MS', 30_000, 0, 3_600_000),
    http: httpLimits(env),
    unauthenticatedOffLoopback: unauthenticatedOffLoopback(env),
  };
}

function httpLimits(env: NodeJS.ProcessEnv): HttpLimits {
  // 30 s: a 64 KiB body takes well under a second even on a poor mobile link. At most Node's own 5 minutes.
  const requestTimeoutMs = envInteger(env, 'THREADLINE_HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 300_000);
  // 10 s: headers are a few hundred bytes; a shorter hold frees a slow or silent client's slot sooner.
  const headersTimeoutMs = envInteger(env, 'THREADLINE_HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 100, 300_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'THREADLINE_HTTP_HEADERS_TIMEOUT_MS',
      `${headersTimeoutMs} is over THREADLINE_HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), which includes the headers`,
    );
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs,
    // 65 s: above the 60 s idle timeout of common load balancers, so they close first and never reuse a closing socket.
    keepAliveTimeoutMs: envInteger(env, 'THREADLINE_HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 100, 3_600_000),
    // 1,024: far above Telegram's 100 webhook connections or a balancer's pool; at most 64 MiB of bodies in flight.
    maxConnections: envInteger(env, 'THREADLINE_HTTP_MAX_CONNECTIONS', 1_024, 1, 1_000_000),
  };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

function isLoopback(host: string): boolean {
  const family = isIP(host);
  return host.toLowerCase() === 'localhost' || (family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6'));
}

/**
 * Without a token the webhook takes any chat_id from whoever reaches the port: off loopback
 * that is refused unless THREADLINE_ALLOW_UNAUTHENTICATED=1 says it is meant.
 */
function unauthenticatedOffLoopback(env: NodeJS.ProcessEnv): boolean {
  const host = envString(env, 'HOST'); // unset: 127.0.0.1
  if (host === undefined || isLoopback(host) || envString(env, 'THREADLINE_WEBHOOK_TOKEN') !== undefined) return false;
  if (envFlag(env, 'THREADLINE_ALLOW_UNAUTHENTICATED')) return true;
  throw new ConfigError(
    'THREADLINE_WEBHOOK_TOKEN',
    `is required with HOST=${host}, which is not a loopback address: anyone who reaches the port could post to any chat. ` +
      'Set THREADLINE_WEBHOOK_TOKEN (a long random string; callers send Authorization: Bearer <token>), or HOST=127.0.0.1, ' +
      'or THREADLINE_ALLOW_UNAUTHENTICATED=1 if something in front of the gateway authenticates callers',
  );
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
