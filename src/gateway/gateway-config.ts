import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../errors.js';
import { commaList } from '../env-vars.js';
import { readInstanceId } from '../config/instance-id.js';
import { readChoice, readFlag, readInteger, readRedisUrl, readText, readUrl } from '../config/read-setting.js';
import { Admins } from './commands/admins.js';
import { readOperatorConfig, type OperatorConfig } from './operator-config.js';
import { isDiscordPublicKey } from '../platforms/discord/discord-signature.js';
import { parseKeepBaggage, type KeepBaggage } from '../session/index.js';
import { readToolsConfig, type ToolsConfig } from '../tools/tools-config.js';

export interface TelegramConfig {
  readonly token: string;
  readonly mode: 'webhook' | 'polling';
  readonly webhookSecret: string | undefined;
  readonly apiRoot: string;
  /** THREADLINE_TELEGRAM_EDIT_INTERVAL_MS and THREADLINE_TELEGRAM_GROUP_EDIT_INTERVAL_MS. */
  readonly liveEdits: { readonly dmMs: number; readonly groupMs: number };
}

export interface SlackConfig {
  readonly botToken: string;
  readonly signingSecret: string;
  readonly apiUrl: string;
  readonly threadTopLevel: boolean;
  /** THREADLINE_SLACK_EDIT_INTERVAL_MS. */
  readonly liveEditMs: number;
}

export interface MattermostConfig {
  /** The server's address, without a trailing slash. */
  readonly url: string;
  readonly token: string;
  readonly threadTopLevel: boolean;
  /** THREADLINE_MATTERMOST_EDIT_INTERVAL_MS. */
  readonly liveEditMs: number;
  /** THREADLINE_MATTERMOST_CATCH_UP_MS. */
  readonly catchUpMs: number;
}

export interface MatrixConfig {
  /** The client-server API root, without a trailing slash. */
  readonly homeserverUrl: string;
  readonly accessToken: string;
  /** THREADLINE_MATRIX_EDIT_INTERVAL_MS. */
  readonly liveEditMs: number;
}

export interface DiscordConfig {
  readonly botToken: string;
  /** The REST root without its version; the Gateway URL comes from its GET /gateway/bot. */
  readonly apiRoot: string;
  /** THREADLINE_DISCORD_EDIT_INTERVAL_MS. */
  readonly liveEditMs: number;
  /** THREADLINE_DISCORD_REQUESTS_PER_SECOND: the global limit the REST client keeps to. */
  readonly requestsPerSecond: number;
  /** THREADLINE_DISCORD_PUBLIC_KEY: set, slash commands come in over HTTP interactions too. */
  readonly publicKey: string | undefined;
}

/** Several instances sharing one Redis (THREADLINE_REDIS_URL and the settings beside it). */
export interface RedisConfig {
  /** May hold a password: show it through redactRedisUrl (src/config/redis-url.ts), never as it is. */
  readonly url: string;
  /** Of every key and queue name. */
  readonly prefix: string;
  /** The queues this instance works; it accepts messages either way. */
  readonly workers: { readonly turns: boolean; readonly deliveries: boolean };
  /** THREADLINE_INSTANCE_ID: stable across restarts; owns the background commands it starts. */
  readonly instanceId: string;
  /** THREADLINE_INSTANCE_LEASE_MS: work of an instance that stopped answering moves on after this. */
  readonly leaseMs: number;
  /** THREADLINE_REDIS_CHECK_INTERVAL_MS: how often a running instance checks that Redis can still hold its work. */
  readonly checkEveryMs: number;
  /** THREADLINE_REDIS_FSYNC: `always` refuses a Redis that does not fsync every write. */
  readonly fsync: 'server' | 'always';
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
  /** Present when THREADLINE_MATTERMOST_URL and THREADLINE_MATTERMOST_TOKEN are set. */
  readonly mattermost: MattermostConfig | undefined;
  /** Present when THREADLINE_MATRIX_HOMESERVER_URL and THREADLINE_MATRIX_ACCESS_TOKEN are set. */
  readonly matrix: MatrixConfig | undefined;
  /** Present when THREADLINE_DISCORD_BOT_TOKEN is set. */
  readonly discord: DiscordConfig | undefined;
  /** THREADLINE_ADMINS: who may run admin commands (/sethome); unset, nobody. */
  readonly admins: Admins;
  /** THREADLINE_INBOUND_BAGGAGE: the foreign inbound baggage every platform keeps; default none. */
  readonly inboundBaggage: KeepBaggage;
  readonly concurrency: number;
  readonly queueCapacity: number;
  readonly perUserGroupSessions: boolean;
  readonly strictRouting: boolean;
  /** THREADLINE_TYPING_INTERVAL_MS and THREADLINE_DRAFT_INTERVAL_MS. */
  readonly presence: { readonly typingIntervalMs: number; readonly draftIntervalMs: number };
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
  /** The tools, their caps, and the LLM agent when one is configured. */
  readonly tools: ToolsConfig;
  /** Present when THREADLINE_REDIS_URL is set: state and queues in Redis, shared with other instances. */
  readonly redis?: RedisConfig;
  /** THREADLINE_ADMIN_TOKEN and THREADLINE_TRACE_UI_URL: the operator's page. */
  readonly operator: OperatorConfig;
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

/** The gateway's configuration, read once at start-up through the settings table (src/config/settings.ts). */
export function readGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return {
    port: readInteger(env, 'PORT'),
    host: readText(env, 'HOST'),
    dataDir: readText(env, 'THREADLINE_DATA_DIR'),
    webhook: {
      token: readText(env, 'THREADLINE_WEBHOOK_TOKEN'),
      deliveryUrl: readUrl(env, 'THREADLINE_WEBHOOK_DELIVERY_URL'),
    },
    telegram: telegramConfig(env),
    slack: slackConfig(env),
    mattermost: readMattermostConfig(env),
    matrix: readMatrixConfig(env),
    discord: discordConfig(env),
    admins: adminsOf(env),
    inboundBaggage: parseKeepBaggage(readText(env, 'THREADLINE_INBOUND_BAGGAGE')),
    concurrency: readInteger(env, 'THREADLINE_CONCURRENCY'),
    queueCapacity: readInteger(env, 'THREADLINE_QUEUE_CAPACITY'),
    perUserGroupSessions: readChoice(env, 'THREADLINE_GROUP_SESSIONS') === 'per-user',
    strictRouting: readFlag(env, 'THREADLINE_STRICT_ROUTING'),
    presence: { typingIntervalMs: readInteger(env, 'THREADLINE_TYPING_INTERVAL_MS'), draftIntervalMs: readInteger(env, 'THREADLINE_DRAFT_INTERVAL_MS') },
    deliveryMaxAttempts: readInteger(env, 'THREADLINE_DELIVERY_MAX_ATTEMPTS'),
    deliveryBackoffMs: readInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MS'),
    deliveryBackoffMaxMs: readInteger(env, 'THREADLINE_DELIVERY_BACKOFF_MAX_MS'),
    deliveryMaxRetryAfterMs: readInteger(env, 'THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS'),
    deliveryGiveUpMs: readInteger(env, 'THREADLINE_DELIVERY_GIVE_UP_MS'),
    deliveryLeaseMs: readInteger(env, 'THREADLINE_DELIVERY_LEASE_MS'),
    outboxMaxPerChat: readInteger(env, 'THREADLINE_OUTBOX_MAX_PER_CHAT'),
    outboxMaxPending: readInteger(env, 'THREADLINE_OUTBOX_MAX_PENDING'),
    deadLetterRetentionMs: readInteger(env, 'THREADLINE_DEAD_LETTER_RETENTION_MS'),
    webhookIdempotencyMs: readInteger(env, 'THREADLINE_WEBHOOK_IDEMPOTENCY_MS'),
    shutdownTimeoutMs: readInteger(env, 'THREADLINE_SHUTDOWN_TIMEOUT_MS'),
    http: httpLimits(env),
    unauthenticatedOffLoopback: unauthenticatedOffLoopback(env),
    tools: readToolsConfig(env, readText(env, 'THREADLINE_DATA_DIR')),
    operator: readOperatorConfig(env),
    ...redisEntry(readRedisConfig(env)),
  };
}

/** What an instance may work; `none` alone, or any of the others. */
const WORKER_QUEUES = ['turns', 'deliveries'] as const;
/** Safe in a Redis key and a BullMQ prefix, which a `:` would split. */
const REDIS_PREFIX = /^[A-Za-z0-9._-]{1,64}$/;

/** The optional property spelled out: exactOptionalPropertyTypes takes no `redis: undefined`. */
function redisEntry(redis: RedisConfig | undefined): { redis?: RedisConfig } {
  return redis === undefined ? {} : { redis };
}

/**
 * The Redis settings, or undefined when THREADLINE_REDIS_URL is unset (one instance, SQLite);
 * `threadline doctor` reads them alone, so another bad setting does not hide them.
 */
export function readRedisConfig(env: NodeJS.ProcessEnv): RedisConfig | undefined {
  // All read before the URL decides: a bad value is refused even with Redis off.
  const prefix = readText(env, 'THREADLINE_REDIS_PREFIX');
  if (!REDIS_PREFIX.test(prefix)) {
    throw new ConfigError('THREADLINE_REDIS_PREFIX', `"${prefix}" is not 1 to 64 letters, digits, ".", "_" or "-"`);
  }
  const workers = parseWorkers(readText(env, 'THREADLINE_WORKERS'));
  const instanceId = readInstanceId(env);
  const leaseMs = readInteger(env, 'THREADLINE_INSTANCE_LEASE_MS');
  const checkEveryMs = readInteger(env, 'THREADLINE_REDIS_CHECK_INTERVAL_MS');
  const fsync = readChoice(env, 'THREADLINE_REDIS_FSYNC');
  const url = readRedisUrl(env, 'THREADLINE_REDIS_URL');
  return url === undefined ? undefined : { url, prefix, workers, instanceId, leaseMs, checkEveryMs, fsync };
}

function parseWorkers(value: string): RedisConfig['workers'] {
  const queues = commaList(value.toLowerCase());
  if (queues.length === 1 && queues[0] === 'none') return { turns: false, deliveries: false };
  const unknown = queues.filter((queue) => !(WORKER_QUEUES as readonly string[]).includes(queue));
  if (queues.length === 0 || unknown.length > 0) {
    throw new ConfigError('THREADLINE_WORKERS', `"${value}" is not turns,deliveries, turns, deliveries or none`);
  }
  return { turns: queues.includes('turns'), deliveries: queues.includes('deliveries') };
}

function httpLimits(env: NodeJS.ProcessEnv): HttpLimits {
  const requestTimeoutMs = readInteger(env, 'THREADLINE_HTTP_REQUEST_TIMEOUT_MS');
  const headersTimeoutMs = readInteger(env, 'THREADLINE_HTTP_HEADERS_TIMEOUT_MS');
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'THREADLINE_HTTP_HEADERS_TIMEOUT_MS',
      `${headersTimeoutMs} is over THREADLINE_HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), which includes the headers`,
    );
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: readInteger(env, 'THREADLINE_HTTP_KEEP_ALIVE_TIMEOUT_MS'),
    maxConnections: readInteger(env, 'THREADLINE_HTTP_MAX_CONNECTIONS'),
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
 * THREADLINE_ADMINS; `*` is refused beside the terminal when the webhook takes callers without
 * a token: every process that reaches the port would be an admin with a shell.
 */
function adminsOf(env: NodeJS.ProcessEnv): Admins {
  const admins = Admins.parse(readText(env, 'THREADLINE_ADMINS'));
  if (admins.isEveryone && readFlag(env, 'THREADLINE_TERMINAL') && readText(env, 'THREADLINE_WEBHOOK_TOKEN') === undefined) {
    throw new ConfigError(
      'THREADLINE_ADMINS',
      '"*" with THREADLINE_TERMINAL=1 and no THREADLINE_WEBHOOK_TOKEN would give a shell to any process that reaches the webhook port: ' +
        'set THREADLINE_WEBHOOK_TOKEN, or list the admins (platform:user_id)',
    );
  }
  return admins;
}

/**
 * Without a token the webhook takes any chat_id from whoever reaches the port: off loopback
 * that is refused unless THREADLINE_ALLOW_UNAUTHENTICATED=1 says it is meant.
 */
function unauthenticatedOffLoopback(env: NodeJS.ProcessEnv): boolean {
  const host = readText(env, 'HOST');
  // Read first: a bad value is refused even where it would not matter.
  const allowed = readFlag(env, 'THREADLINE_ALLOW_UNAUTHENTICATED');
  if (isLoopback(host) || readText(env, 'THREADLINE_WEBHOOK_TOKEN') !== undefined) return false;
  if (allowed) return true;
  throw new ConfigError(
    'THREADLINE_WEBHOOK_TOKEN',
    `is required with HOST=${host}, which is not a loopback address: anyone who reaches the port could post to any chat. ` +
      'Set THREADLINE_WEBHOOK_TOKEN (a long random string; callers send Authorization: Bearer <token>), or HOST=127.0.0.1, ' +
      'or THREADLINE_ALLOW_UNAUTHENTICATED=1 if something in front of the gateway authenticates callers',
  );
}

function telegramConfig(env: NodeJS.ProcessEnv): TelegramConfig | undefined {
  // All read before the token decides: a bad value is refused even with Telegram off.
  const mode = readChoice(env, 'THREADLINE_TELEGRAM_MODE');
  const webhookSecret = readText(env, 'THREADLINE_TELEGRAM_WEBHOOK_SECRET');
  const apiRoot = readUrl(env, 'THREADLINE_TELEGRAM_API_ROOT').replace(/\/$/, '');
  const liveEdits = { dmMs: readInteger(env, 'THREADLINE_TELEGRAM_EDIT_INTERVAL_MS'), groupMs: readInteger(env, 'THREADLINE_TELEGRAM_GROUP_EDIT_INTERVAL_MS') };
  const token = readText(env, 'THREADLINE_TELEGRAM_BOT_TOKEN');
  if (token === undefined) return undefined;
  if (mode === 'webhook' && webhookSecret === undefined) {
    throw new ConfigError(
      'THREADLINE_TELEGRAM_WEBHOOK_SECRET',
      'is required in webhook mode: pass the same value as secret_token to setWebhook, or set THREADLINE_TELEGRAM_MODE=polling',
    );
  }
  return { token, mode, webhookSecret, apiRoot, liveEdits };
}

function slackConfig(env: NodeJS.ProcessEnv): SlackConfig | undefined {
  // All read before the token decides: a bad value is refused even with Slack off.
  const signingSecret = readText(env, 'THREADLINE_SLACK_SIGNING_SECRET');
  const apiUrl = readUrl(env, 'THREADLINE_SLACK_API_URL');
  const threadTopLevel = readFlag(env, 'THREADLINE_SLACK_THREAD_TOP_LEVEL');
  const liveEditMs = readInteger(env, 'THREADLINE_SLACK_EDIT_INTERVAL_MS');
  const botToken = readText(env, 'THREADLINE_SLACK_BOT_TOKEN');
  if (botToken === undefined) return undefined;
  if (signingSecret === undefined) {
    throw new ConfigError('THREADLINE_SLACK_SIGNING_SECRET', "is required with a Slack bot token: copy it from the app's Basic Information page");
  }
  return { botToken, signingSecret, apiUrl, threadTopLevel, liveEditMs };
}

/** The Mattermost settings, or undefined when neither URL nor token is set; `threadline doctor` reads them alone. */
export function readMattermostConfig(env: NodeJS.ProcessEnv): MattermostConfig | undefined {
  // All read before the credentials decide: a bad value is refused even with Mattermost off.
  const url = readUrl(env, 'THREADLINE_MATTERMOST_URL')?.replace(/\/+$/, '');
  const token = readText(env, 'THREADLINE_MATTERMOST_TOKEN');
  const threadTopLevel = readFlag(env, 'THREADLINE_MATTERMOST_THREAD_TOP_LEVEL');
  const liveEditMs = readInteger(env, 'THREADLINE_MATTERMOST_EDIT_INTERVAL_MS');
  const catchUpMs = readInteger(env, 'THREADLINE_MATTERMOST_CATCH_UP_MS');
  if (url === undefined && token === undefined) return undefined;
  if (url === undefined) throw new ConfigError('THREADLINE_MATTERMOST_URL', "is required with a Mattermost token: the server's address, such as https://chat.example.com");
  if (token === undefined) throw new ConfigError('THREADLINE_MATTERMOST_TOKEN', "is required with a Mattermost URL: the bot account's access token");
  return { url, token, threadTopLevel, liveEditMs, catchUpMs };
}

/** The Matrix settings, or undefined when neither is set; `threadline doctor` reads them alone. */
export function readMatrixConfig(env: NodeJS.ProcessEnv): MatrixConfig | undefined {
  // All read before the credentials decide: a bad value is refused even with Matrix off.
  const homeserverUrl = readUrl(env, 'THREADLINE_MATRIX_HOMESERVER_URL')?.replace(/\/+$/, '');
  const accessToken = readText(env, 'THREADLINE_MATRIX_ACCESS_TOKEN');
  const liveEditMs = readInteger(env, 'THREADLINE_MATRIX_EDIT_INTERVAL_MS');
  if (homeserverUrl === undefined && accessToken === undefined) return undefined;
  if (homeserverUrl === undefined) {
    throw new ConfigError('THREADLINE_MATRIX_HOMESERVER_URL', "is required with a Matrix access token: the homeserver's client-server API root, such as https://matrix.example.org");
  }
  if (accessToken === undefined) {
    throw new ConfigError('THREADLINE_MATRIX_ACCESS_TOKEN', "is required with a Matrix homeserver URL: the bot account's access token (docs/platforms.md says how to get one)");
  }
  return { homeserverUrl, accessToken, liveEditMs };
}

function discordConfig(env: NodeJS.ProcessEnv): DiscordConfig | undefined {
  // All read before the token decides: a bad value is refused even with Discord off.
  const apiRoot = readUrl(env, 'THREADLINE_DISCORD_API_ROOT').replace(/\/$/, '');
  const liveEditMs = readInteger(env, 'THREADLINE_DISCORD_EDIT_INTERVAL_MS');
  const requestsPerSecond = readInteger(env, 'THREADLINE_DISCORD_REQUESTS_PER_SECOND');
  const publicKey = readText(env, 'THREADLINE_DISCORD_PUBLIC_KEY');
  if (publicKey !== undefined && !isDiscordPublicKey(publicKey)) {
    throw new ConfigError('THREADLINE_DISCORD_PUBLIC_KEY', "is not 64 hex digits: copy the Public Key from the application's General Information page");
  }
  const botToken = readText(env, 'THREADLINE_DISCORD_BOT_TOKEN');
  return botToken === undefined ? undefined : { botToken, apiRoot, liveEditMs, requestsPerSecond, publicKey };
}
