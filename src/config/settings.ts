/**
 * Every environment variable threadline reads, in one table: its kind, default, range or
 * choices, whether it is a secret, and what it does. The configuration readers, `threadline
 * config` and docs/configuration.md all come from here, so none of them can drift.
 */
import { DEFAULT_OUTBOUND_POLICY } from '../session/outbound-policy.js';

export type SettingGroup =
  | 'server'
  | 'redis'
  | 'webhook'
  | 'telegram'
  | 'matrix'
  | 'slack'
  | 'mattermost'
  | 'discord'
  | 'turns'
  | 'http'
  | 'traces'
  | 'metrics'
  | 'propagation'
  | 'privacy'
  | 'tools'
  | 'llm';

/** The groups in the order the docs and `threadline config` show them, with their headings. */
export const SETTING_GROUPS: Readonly<Record<SettingGroup, string>> = {
  server: 'Server and store',
  redis: 'Several instances on Redis',
  webhook: 'Webhook platform',
  telegram: 'Telegram',
  matrix: 'Matrix',
  slack: 'Slack',
  mattermost: 'Mattermost',
  discord: 'Discord',
  turns: 'Turns, deliveries and the outbox',
  http: 'HTTP client limits',
  traces: 'Traces',
  metrics: 'Metrics',
  propagation: 'Propagation and baggage',
  privacy: 'Privacy and logs',
  tools: 'Tools and background work',
  llm: 'LLM agent',
};

interface SettingBase {
  readonly group: SettingGroup;
  /** One line: what the setting does. */
  readonly description: string;
  /** Shown as `(set)` by `threadline config`, never its value. */
  readonly secret?: boolean;
  /** Names people: `threadline config` shows how many entries, not who. */
  readonly personal?: boolean;
  /** The default in words, where it depends on other settings (src/config/read-setting.ts computes it). */
  readonly defaultText?: string;
  /** Read by the OpenTelemetry SDK or its exporters themselves; threadline checks the value at start-up. */
  readonly readBySdk?: boolean;
}

interface IntegerSetting extends SettingBase {
  readonly kind: 'integer';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** Milliseconds the SDK takes as any number: a fraction is accepted too. */
  readonly fractional?: boolean;
}

/** `1`/`true` or `0`/`false`, any case. */
interface FlagSetting extends SettingBase {
  readonly kind: 'flag';
  readonly default: boolean;
}

interface ChoiceSetting extends SettingBase {
  readonly kind: 'choice';
  readonly choices: readonly string[];
  readonly default: string;
  /** The SDK compares it without lower-casing it: any other case is refused, as the SDK would misread it. */
  readonly caseSensitive?: boolean;
  /** The SDK does not trim it: spaces around it are refused, as the SDK would misread them. */
  readonly spaceSensitive?: boolean;
}

/** Free text its reader parses (`format` says how), or an http(s) URL. */
interface TextSetting extends SettingBase {
  readonly kind: 'text' | 'url';
  readonly default: string | undefined;
  /** The shape of the value, for the docs. */
  readonly format?: string;
  /** An empty value means "none", not "unset". */
  readonly emptyIsValue?: boolean;
  /** Used exactly as given: trimming a key would change every value derived from it. */
  readonly untrimmed?: boolean;
}

/** A `redis://` or `rediss://` URL; shown with its password masked. */
interface RedisUrlSetting extends SettingBase {
  readonly kind: 'redis-url';
  readonly default: undefined;
}

export type Setting = IntegerSetting | FlagSetting | ChoiceSetting | TextSetting | RedisUrlSetting;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const MIB = 1024 * 1024;
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
/** Node's largest timer: the SDK hands its timeouts to setTimeout, which fires at once past it. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The OTLP exporter's settings every signal shares, named `OTEL_EXPORTER_OTLP_<NAME>`, each of
 * which a signal may set for itself alone (`OTEL_EXPORTER_OTLP_<SIGNAL>_<NAME>`), as the SDK reads them.
 */
const OTLP_SHARED = {
  HEADERS: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    secret: true,
    readBySdk: true,
    format: '`key=value,key=value` (values percent-encoded)',
    description: 'headers sent with each OTLP export of every signal, e.g. a hosted backend\'s API key (`authorization=Bearer%20…`); shown as `(set)`, never logged',
  },
  TIMEOUT: {
    kind: 'integer',
    group: 'traces',
    default: 10_000,
    min: 1,
    max: MAX_TIMER_MS,
    fractional: true,
    readBySdk: true,
    description: 'milliseconds one OTLP export of every signal may take',
  },
  COMPRESSION: {
    kind: 'choice',
    group: 'traces',
    choices: ['none', 'gzip'],
    default: 'none',
    readBySdk: true,
    caseSensitive: true,
    description: 'compression of the OTLP exports of every signal',
  },
  CERTIFICATE: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    defaultText: 'unset (the system roots)',
    format: 'a PEM file',
    description: 'the CA certificates a TLS collector of every signal is checked against',
  },
  CLIENT_CERTIFICATE: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    format: 'a PEM file',
    description: 'the client certificate chain for mutual TLS with the collector of every signal',
  },
  CLIENT_KEY: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    format: 'a PEM file',
    description: 'the private key of that client certificate (the path is shown; the file is never read into a log)',
  },
  INSECURE: {
    kind: 'choice',
    group: 'traces',
    choices: ['false', 'true'],
    default: 'false',
    readBySdk: true,
    description: 'read by the gRPC exporter of every signal only for an endpoint without a scheme, which threadline refuses: with an http(s) endpoint the scheme decides, `http://` without TLS and `https://` with it',
  },
} as const satisfies Record<string, Setting>;

type OtlpShared = typeof OTLP_SHARED;
type OtlpSignal = 'TRACES' | 'METRICS' | 'LOGS';

/** The shared rows under their own names. */
function otlpSharedSettings(): { readonly [P in keyof OtlpShared as `OTEL_EXPORTER_OTLP_${P}`]: OtlpShared[P] } {
  return Object.fromEntries(Object.entries(OTLP_SHARED).map(([part, row]) => [`OTEL_EXPORTER_OTLP_${part}`, row])) as never;
}

/**
 * A signal's own rows: each the shared row for `alone` alone, in the signal's `group`, its
 * default the shared setting's value.
 */
function otlpSignalSettings<S extends OtlpSignal>(
  signal: S,
  alone: string,
  group: SettingGroup,
): { readonly [P in keyof OtlpShared as `OTEL_EXPORTER_OTLP_${S}_${P}`]: Omit<OtlpShared[P], 'group' | 'description'> & { readonly group: SettingGroup; readonly defaultText: string; readonly description: string } } {
  const description = (part: keyof OtlpShared): string =>
    part === 'HEADERS'
      ? `headers sent with each OTLP export of ${alone} alone, instead of \`OTEL_EXPORTER_OTLP_HEADERS\`; shown as \`(set)\``
      : OTLP_SHARED[part].description.replace('of every signal', `of ${alone} alone`);
  return Object.fromEntries(
    (Object.keys(OTLP_SHARED) as (keyof OtlpShared)[]).map((part) => [
      `OTEL_EXPORTER_OTLP_${signal}_${part}`,
      { ...OTLP_SHARED[part], group, defaultText: `\`OTEL_EXPORTER_OTLP_${part}\``, description: description(part) },
    ]),
  ) as never;
}

export const SETTINGS = {
  // Server and store
  PORT: { kind: 'integer', group: 'server', default: 8787, min: 0, max: 65535, description: 'HTTP port (0: any free port)' },
  HOST: {
    kind: 'text',
    group: 'server',
    default: '127.0.0.1',
    format: 'an address or host name',
    description: 'address to bind; `0.0.0.0` in a container (off loopback, `THREADLINE_WEBHOOK_TOKEN` is required)',
  },
  THREADLINE_DATA_DIR: {
    kind: 'text',
    group: 'server',
    default: './data',
    format: 'a directory',
    description: 'where the SQLite store (`threadline.db`), its lock and the trace file live',
  },
  THREADLINE_SHUTDOWN_TIMEOUT_MS: {
    kind: 'integer',
    group: 'server',
    default: 30_000,
    min: 0,
    max: 3_600_000,
    description:
      "one deadline for the whole stop on SIGTERM or SIGINT; then running turns and sends are aborted and run again at the next start. Set the orchestrator's grace period at least 15 s above it, for the span and metric flush that follows",
  },
  THREADLINE_ADMINS: {
    kind: 'text',
    group: 'server',
    default: undefined,
    personal: true,
    defaultText: 'unset (nobody)',
    format: '`*`, or comma-separated `platform:user_id` (`:` in an id written `%3A`)',
    description:
      'who may run admin commands and admin-only tools, e.g. `telegram:42,slack:U123,webhook:alice`; `*` is everyone (refused beside `THREADLINE_TERMINAL=1` without `THREADLINE_WEBHOOK_TOKEN`)',
  },
  THREADLINE_ADMIN_TOKEN: {
    kind: 'text',
    group: 'server',
    default: undefined,
    secret: true,
    defaultText: 'unset (the operator\'s page answers loopback clients only)',
    format: 'a long random string (32 characters or more)',
    description:
      "the operator's page at `/v1/admin` (docs/operations.md): sent as `Authorization: Bearer <token>`, or typed once into its login form, which sets an HttpOnly, SameSite=Strict cookie",
  },

  // Several instances on Redis
  THREADLINE_REDIS_URL: {
    kind: 'redis-url',
    group: 'redis',
    default: undefined,
    secret: true,
    defaultText: 'unset (one instance, its store in SQLite)',
    description:
      'a shared Redis (6.2 or later, `maxmemory-policy noeviction`, AOF on): every instance set to it shares the state, the messages waiting for a turn and the outbox. Its password is never shown: `threadline config` shows `redis://:***@host:port/db`',
  },
  THREADLINE_REDIS_PREFIX: {
    kind: 'text',
    group: 'redis',
    default: 'threadline',
    format: 'letters, digits, `.`, `_` and `-`',
    description: 'the start of every key and queue name, so several deployments can share one Redis',
  },
  THREADLINE_WORKERS: {
    kind: 'text',
    group: 'redis',
    default: 'turns,deliveries',
    format: '`turns,deliveries`, `turns`, `deliveries` or `none`',
    description: 'the queues this instance works: it runs turns (and the runs of cron jobs and reminders), sends deliveries, both or neither; every instance accepts messages and schedules jobs whatever this says',
  },
  THREADLINE_INSTANCE_ID: {
    kind: 'text',
    group: 'redis',
    default: undefined,
    defaultText: 'the host name and a digest of `THREADLINE_DATA_DIR`',
    format: 'letters, digits, `.`, `_` and `-`',
    description:
      "this instance's name, the same across its restarts: the background commands it starts are watched and ended by it alone (their pids mean nothing on another host), and its spans carry it as `service.instance.id`",
  },
  THREADLINE_INSTANCE_LEASE_MS: {
    kind: 'integer',
    group: 'redis',
    default: 30_000,
    min: 1_000,
    max: 600_000,
    description:
      'how long a turn or a delivery held by an instance that stopped answering (killed, cut off) waits before another instance takes it over; an instance renews its leases several times within it. Its heartbeat lasts as long: once it has lapsed, another instance tells the chats of its background commands they were lost with it, and takes over Telegram long polling. A cron or reminder run is held as long, and the instance holding the schedules lease matches the schedules queue to the stored jobs once every lease',
  },

  THREADLINE_REDIS_FSYNC: {
    kind: 'choice',
    group: 'redis',
    choices: ['server', 'always'],
    default: 'server',
    description:
      "how durable an accepted message is (docs/distributed.md, Durability): `server`, as the server's persistence makes it (with AOF `everysec`, a Redis process crash loses nothing and a machine crash up to the last second); `always`, nothing acknowledged is lost even then: the gateway refuses to start unless Redis has `appendonly yes` and `appendfsync always`",
  },

  THREADLINE_REDIS_CHECK_INTERVAL_MS: {
    kind: 'integer',
    group: 'redis',
    default: 10_000,
    min: 100,
    max: 600_000,
    description:
      'how often a running instance checks again what start-up checked of its Redis (`maxmemory-policy noeviction`, version): while Redis is unsuitable `/v1/ready` answers 503 and intake refuses messages with `TL_REDIS_UNSUITABLE`, with one error logged and `threadline.redis.unsuitable` counted when it turns so',
  },

  // Webhook platform
  THREADLINE_WEBHOOK_TOKEN: {
    kind: 'text',
    group: 'webhook',
    default: undefined,
    secret: true,
    format: 'a long random string',
    description: 'bearer token required on `POST /v1/messages`; required when `HOST` is not a loopback address',
  },
  THREADLINE_ALLOW_UNAUTHENTICATED: {
    kind: 'flag',
    group: 'webhook',
    default: false,
    description: '`1`: start with `HOST` off loopback and no webhook token, when something in front authenticates callers (logs a warning)',
  },
  THREADLINE_WEBHOOK_DELIVERY_URL: {
    kind: 'url',
    group: 'webhook',
    default: undefined,
    description: 'where webhook replies are POSTed (a `user:password@` in it is sent as HTTP Basic auth); unset, they are logged',
  },
  THREADLINE_WEBHOOK_IDEMPOTENCY_MS: {
    kind: 'integer',
    group: 'webhook',
    default: DAY_MS,
    min: 1,
    max: 30 * DAY_MS,
    description: 'how long a webhook `Idempotency-Key` or `message_id` is remembered',
  },

  // Telegram
  THREADLINE_TELEGRAM_BOT_TOKEN: {
    kind: 'text',
    group: 'telegram',
    default: undefined,
    secret: true,
    format: "BotFather's token",
    description: 'enables Telegram',
  },
  THREADLINE_TELEGRAM_MODE: {
    kind: 'choice',
    group: 'telegram',
    choices: ['webhook', 'polling'],
    default: 'webhook',
    description: 'how updates arrive: a webhook at `/v1/telegram/webhook`, or long polling',
  },
  THREADLINE_TELEGRAM_WEBHOOK_SECRET: {
    kind: 'text',
    group: 'telegram',
    default: undefined,
    secret: true,
    format: "setWebhook's `secret_token`",
    description: 'required in webhook mode; requests without it are refused (401)',
  },
  THREADLINE_TELEGRAM_API_ROOT: {
    kind: 'url',
    group: 'telegram',
    default: 'https://api.telegram.org',
    description: 'Bot API root (a local Bot API server, a fake in tests)',
  },

  THREADLINE_TELEGRAM_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'telegram',
    default: 1_100,
    min: 0,
    max: 60_000,
    description:
      'in a private chat where drafts are not shown, the least time between two edits of the live message that shows an answer as it is written (Telegram allows about one a second); `0`: no live message there',
  },
  THREADLINE_TELEGRAM_GROUP_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'telegram',
    default: 3_100,
    min: 0,
    max: 60_000,
    description:
      'in groups and channels, the least time between two edits of the live message of an answer being written (Telegram allows about 20 a minute in a group); `0`: no live messages there',
  },

  // Matrix
  THREADLINE_MATRIX_HOMESERVER_URL: {
    kind: 'url',
    group: 'matrix',
    default: undefined,
    description: "the homeserver's client-server API root (`https://matrix.example.org`); with the access token, enables Matrix",
  },
  THREADLINE_MATRIX_ACCESS_TOKEN: {
    kind: 'text',
    group: 'matrix',
    default: undefined,
    secret: true,
    format: "the bot account's access token",
    description: 'with the homeserver URL, enables Matrix: `/sync` for messages (on one instance at a time), the client-server API for answers',
  },
  THREADLINE_MATRIX_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'matrix',
    default: 2_000,
    min: 0,
    max: 60_000,
    description:
      "the least time between two edits (`m.replace`) of the live message that shows an answer as it is written, in its thread (Synapse's default `rc_message` allows a burst of 10 messages, then one every 5 s); `0`: no live messages",
  },

  // Slack
  THREADLINE_SLACK_BOT_TOKEN: {
    kind: 'text',
    group: 'slack',
    default: undefined,
    secret: true,
    format: '`xoxb-…`',
    description: 'enables Slack',
  },
  THREADLINE_SLACK_SIGNING_SECRET: {
    kind: 'text',
    group: 'slack',
    default: undefined,
    secret: true,
    format: "the app's signing secret",
    description: 'required with a Slack bot token',
  },
  THREADLINE_SLACK_API_URL: { kind: 'url', group: 'slack', default: 'https://slack.com/api/', description: 'Web API root' },
  THREADLINE_SLACK_THREAD_TOP_LEVEL: {
    kind: 'flag',
    group: 'slack',
    default: false,
    description: '`1`: answer a top-level message in a thread of its own',
  },

  THREADLINE_SLACK_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'slack',
    default: 1_200,
    min: 0,
    max: 60_000,
    description:
      'the least time between two `chat.update`s of the live message that shows an answer as it is written, in its thread (Tier 3, about 50 a minute for the workspace); `0`: no live messages',
  },

  // Mattermost
  THREADLINE_MATTERMOST_URL: {
    kind: 'url',
    group: 'mattermost',
    default: undefined,
    description: "the server's address (`https://chat.example.com`); with the token, enables Mattermost",
  },
  THREADLINE_MATTERMOST_TOKEN: {
    kind: 'text',
    group: 'mattermost',
    default: undefined,
    secret: true,
    format: "a bot account's access token",
    description: 'with the URL, enables Mattermost',
  },
  THREADLINE_MATTERMOST_THREAD_TOP_LEVEL: {
    kind: 'flag',
    group: 'mattermost',
    default: false,
    description: '`1`: answer a top-level post in a thread rooted at it (unset: in the channel)',
  },
  THREADLINE_MATTERMOST_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'mattermost',
    default: 1_000,
    min: 0,
    max: 60_000,
    description:
      'the least time between two edits of the live post that shows an answer as it is written, in its thread (a server with rate limiting on allows 10 requests a second by default); `0`: no live posts',
  },
  THREADLINE_MATTERMOST_CATCH_UP_MS: {
    kind: 'integer',
    group: 'mattermost',
    default: 600_000,
    min: 0,
    max: DAY_MS,
    description:
      'when an instance opens the websocket and the store keeps no cursor yet (a first start), the posts of this long before are taken; later starts catch up from the stored cursor; `0`: none',
  },

  // Discord
  THREADLINE_DISCORD_BOT_TOKEN: {
    kind: 'text',
    group: 'discord',
    default: undefined,
    secret: true,
    format: "the bot's token (Developer Portal, Bot)",
    description: 'enables Discord: one Gateway connection (on one instance at a time) for messages, the REST API for answers',
  },
  THREADLINE_DISCORD_API_ROOT: {
    kind: 'url',
    group: 'discord',
    default: 'https://discord.com/api',
    description: 'REST API root, without the version (a fake in tests); the Gateway URL comes from its `GET /gateway/bot`',
  },
  THREADLINE_DISCORD_PUBLIC_KEY: {
    kind: 'text',
    group: 'discord',
    default: undefined,
    format: "the application's public key: 64 hex digits (General Information)",
    description:
      'turns on slash commands at `POST /v1/discord/interactions` (the Interactions Endpoint URL), each verified with this key (Ed25519) within 5 minutes of its timestamp; unset, that route is off',
  },
  THREADLINE_DISCORD_REQUESTS_PER_SECOND: {
    kind: 'integer',
    group: 'discord',
    default: 50,
    min: 1,
    max: 10_000,
    description:
      "REST calls a second across all routes (Discord's global limit is 50 a bot, more where Discord granted it); the per-route limits come from Discord's headers",
  },
  THREADLINE_DISCORD_EDIT_INTERVAL_MS: {
    kind: 'integer',
    group: 'discord',
    default: 1_200,
    min: 0,
    max: 60_000,
    description:
      'the least time between two edits of the live message that shows an answer as it is written (a channel takes about 5 messages or edits every 5 s); `0`: no live messages',
  },

  // Turns, deliveries and the outbox
  THREADLINE_CONCURRENCY: {
    kind: 'integer',
    group: 'turns',
    default: 64,
    min: 1,
    max: 10_000,
    description: 'turns running at once (and retries sent at once); with `THREADLINE_REDIS_URL`, this instance\'s: the cluster runs up to the sum of its instances\', one turn a conversation at a time',
  },
  THREADLINE_QUEUE_CAPACITY: {
    kind: 'integer',
    group: 'turns',
    default: 10_000,
    min: 1,
    max: 10_000_000,
    description:
      'messages waiting or running before intake answers 429 (`/stop` has a reserve of `THREADLINE_CONCURRENCY` beyond it); with `THREADLINE_REDIS_URL`, messages waiting across every instance',
  },
  THREADLINE_GROUP_SESSIONS: {
    kind: 'choice',
    group: 'turns',
    choices: ['shared', 'per-user'],
    default: 'shared',
    description: '`per-user`: one session per user in group chats',
  },
  THREADLINE_TYPING_INTERVAL_MS: {
    kind: 'integer',
    group: 'turns',
    default: 4_000,
    min: 0,
    max: 60_000,
    description:
      'while a turn runs, "typing…" is shown in its chat and thread (Telegram: sendChatAction, which lasts about 5 s; Slack: the thread\'s status) from its start until its first reply, sent again this often; `0`: never',
  },
  THREADLINE_DRAFT_INTERVAL_MS: {
    kind: 'integer',
    group: 'turns',
    default: 400,
    min: 0,
    max: 60_000,
    description:
      'the least time between two drafts of an answer shown while the model writes it (Telegram private chats: sendMessageDraft; keep it at 250 or more there); the answer itself is still one message; `0`: no drafts',
  },
  THREADLINE_STRICT_ROUTING: {
    kind: 'flag',
    group: 'turns',
    default: true,
    description:
      'a delivery whose destination differs from its origin without an explicit target is refused and kept as a dead letter; `0`: lenient, it is flagged and sent',
  },
  THREADLINE_DELIVERY_MAX_ATTEMPTS: {
    kind: 'integer',
    group: 'turns',
    default: 10,
    min: 1,
    max: 1000,
    description: 'attempts before a delivery is kept as failed',
  },
  THREADLINE_DELIVERY_BACKOFF_MS: {
    kind: 'integer',
    group: 'turns',
    default: 500,
    min: 1,
    max: 3_600_000,
    description: "first retry's backoff ceiling; doubles per attempt",
  },
  THREADLINE_DELIVERY_BACKOFF_MAX_MS: {
    kind: 'integer',
    group: 'turns',
    default: 300_000,
    min: 1,
    max: 86_400_000,
    description: 'the most any backoff waits',
  },
  THREADLINE_DELIVERY_MAX_RETRY_AFTER_MS: {
    kind: 'integer',
    group: 'turns',
    default: HOUR_MS,
    min: 0,
    max: 7 * DAY_MS,
    description: 'the longest `Retry-After` honoured; a longer one is taken as this',
  },
  THREADLINE_DELIVERY_GIVE_UP_MS: {
    kind: 'integer',
    group: 'turns',
    default: DAY_MS,
    min: 1,
    max: 30 * DAY_MS,
    description: 'a delivery is given up this long after its first attempt, however few it had',
  },
  // Longer than a send may take, so a send under way is not claimed twice.
  THREADLINE_DELIVERY_LEASE_MS: {
    kind: 'integer',
    group: 'turns',
    default: 60_000,
    min: 15_000,
    max: HOUR_MS,
    description: 'how long a delivery being sent is claimed; past it, it counts as lost and is sent again. At least 15 s: longer than a send may take (10 s)',
  },
  THREADLINE_OUTBOX_MAX_PER_CHAT: {
    kind: 'integer',
    group: 'turns',
    default: 1_000,
    min: 1,
    max: 10_000_000,
    description: 'deliveries not yet sent to one chat and thread before its messages are answered 429',
  },
  THREADLINE_OUTBOX_MAX_PENDING: {
    kind: 'integer',
    group: 'turns',
    default: 100_000,
    min: 1,
    max: 100_000_000,
    description: 'deliveries not yet sent in all before every message is answered 503',
  },
  THREADLINE_DEAD_LETTER_RETENTION_MS: {
    kind: 'integer',
    group: 'turns',
    default: 7 * DAY_MS,
    min: 0,
    max: 365 * DAY_MS,
    description: 'how long failed deliveries are kept for `threadline deliveries` (done ones: a day)',
  },

  // HTTP client limits
  // Ample for a whole body on a poor mobile link; capped at Node's own limit.
  THREADLINE_HTTP_REQUEST_TIMEOUT_MS: {
    kind: 'integer',
    group: 'http',
    default: 30_000,
    min: 100,
    max: 300_000,
    description: "a request, body included, must arrive within this, or it gets a 408 and the connection closes. A 64 KiB body takes well under a second even on a poor mobile link; at most Node's own 5 minutes",
  },
  // Headers are small: a shorter hold frees a slow or silent client's slot sooner.
  THREADLINE_HTTP_HEADERS_TIMEOUT_MS: {
    kind: 'integer',
    group: 'http',
    default: 10_000,
    min: 100,
    max: 300_000,
    defaultText: '`10000`, or the request timeout if lower',
    description: "a request's headers, and a new connection's first request, must arrive within this (at most the request timeout); headers are a few hundred bytes",
  },
  // Outlasts a load balancer's idle timeout, so the balancer closes first and never reuses a closing socket.
  THREADLINE_HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    kind: 'integer',
    group: 'http',
    default: 65_000,
    min: 100,
    max: 3_600_000,
    description: 'an idle kept-alive connection is closed after this; above the 60 s idle timeout of common load balancers, so they close first',
  },
  // Far above what Telegram or a balancer's pool opens, while bounding the bodies in flight.
  THREADLINE_HTTP_MAX_CONNECTIONS: {
    kind: 'integer',
    group: 'http',
    default: 1_024,
    min: 1,
    max: 1_000_000,
    description: "connections open at once; one more is closed unanswered as it arrives. The default is far above Telegram's 100 webhook connections or a balancer's pool, with at most 64 MiB of bodies in flight",
  },

  // Traces
  OTEL_SDK_DISABLED: {
    kind: 'flag',
    group: 'traces',
    default: false,
    description: '`true`: no traces and no metrics; session context and propagation still work',
  },
  OTEL_SERVICE_NAME: { kind: 'text', group: 'traces', default: 'threadline', format: 'a name', description: 'the service name on every span and metric' },
  OTEL_RESOURCE_ATTRIBUTES: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    format: '`key=value,key=value`',
    description: 'resource attributes on every span and metric (the SDK reads it); it can set `service.version`, not `service.name`, which is `OTEL_SERVICE_NAME`',
  },
  OTEL_TRACES_EXPORTER: {
    kind: 'choice',
    group: 'traces',
    choices: ['file', 'otlp', 'console', 'none'],
    default: 'file',
    defaultText: '`file`, or `otlp` when an OTLP endpoint is set',
    description: 'where spans go; one value, not a comma-separated list',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: 'url',
    group: 'traces',
    default: undefined,
    defaultText: 'unset (`http://localhost:4318`, gRPC `http://localhost:4317`)',
    description: 'the collector for every signal; setting it switches traces and metrics to `otlp`',
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    kind: 'choice',
    group: 'traces',
    choices: OTLP_PROTOCOLS,
    default: 'http/protobuf',
    description: 'the OTLP encoding for every signal',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    kind: 'url',
    group: 'traces',
    default: undefined,
    defaultText: 'unset (the general endpoint, plus `/v1/traces` over HTTP)',
    description: 'the collector for traces alone; setting it switches traces to `otlp`',
  },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: {
    kind: 'choice',
    group: 'traces',
    choices: OTLP_PROTOCOLS,
    default: 'http/protobuf',
    defaultText: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    description: 'the OTLP encoding for traces alone',
  },
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: {
    kind: 'integer',
    group: 'traces',
    default: 2048,
    min: 1,
    max: 1_000_000,
    description: "spans in one export; larger than the SDK's default because every message ends several spans (the SDK reads it)",
  },
  OTEL_BSP_MAX_QUEUE_SIZE: {
    kind: 'integer',
    group: 'traces',
    default: 16_384,
    min: 1,
    max: 10_000_000,
    description: "spans waiting for export before new ones are dropped; larger than the SDK's default (the SDK reads it)",
  },
  OTEL_TRACES_SAMPLER: {
    kind: 'choice',
    group: 'traces',
    choices: ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'],
    default: 'parentbased_always_on',
    description: "the head sampler: which traces are recorded; a caller's sampled flag never decides, and misroutes and failed deliveries are exported whatever it decides (docs/telemetry.md)",
  },
  OTEL_TRACES_SAMPLER_ARG: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    defaultText: '`1`',
    format: 'a number from 0 to 1',
    description: 'the share of traces the `traceidratio` samplers keep, e.g. `0.01`; a value outside 0 to 1 stops start-up',
  },
  ...otlpSharedSettings(),
  ...otlpSignalSettings('TRACES', 'traces', 'traces'),
  OTEL_BSP_SCHEDULE_DELAY: {
    kind: 'integer',
    group: 'traces',
    default: 5_000,
    min: 0,
    max: MAX_TIMER_MS,
    fractional: true,
    readBySdk: true,
    description: 'milliseconds between two span exports',
  },
  OTEL_BSP_EXPORT_TIMEOUT: {
    kind: 'integer',
    group: 'traces',
    default: 30_000,
    min: 1,
    max: MAX_TIMER_MS,
    fractional: true,
    readBySdk: true,
    description: 'milliseconds one span export may take before it is abandoned',
  },
  OTEL_ATTRIBUTE_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    description: 'attributes kept on a span (and a log record) where no more specific limit is set; the rest are dropped',
  },
  OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    defaultText: 'unlimited',
    format: 'a whole number of characters',
    description: 'string attribute values are cut to this length on spans (and log records) where no more specific limit is set',
  },
  OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    defaultText: '`OTEL_ATTRIBUTE_COUNT_LIMIT`',
    description: 'attributes kept on one span',
  },
  OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    defaultText: '`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`',
    format: 'a whole number of characters',
    description: 'string attribute values on spans are cut to this length',
  },
  OTEL_SPAN_EVENT_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    description: 'events kept on one span (`routing.mismatch` among them)',
  },
  OTEL_SPAN_LINK_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    description: 'links kept on one span',
  },
  OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    description: 'attributes kept on one span event',
  },
  OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT: {
    kind: 'integer',
    group: 'traces',
    default: 128,
    min: 0,
    max: 1_000_000,
    readBySdk: true,
    description: 'attributes kept on one span link',
  },
  OTEL_NODE_RESOURCE_DETECTORS: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    readBySdk: true,
    defaultText: '`env,process,host`',
    format: 'comma-separated: `env`, `host`, `os`, `process`, `serviceinstance`, `all`, `none`',
    description: 'which resource detectors add attributes to the spans\' resource',
  },
  THREADLINE_TRACE_FILE: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    defaultText: '`$THREADLINE_DATA_DIR/traces.jsonl`',
    format: 'a file path',
    description: 'the local trace file of the `file` exporter (one OTLP/JSON export request per line)',
  },
  THREADLINE_TRACE_UI_URL: {
    kind: 'text',
    group: 'traces',
    default: undefined,
    defaultText: 'unset (no links)',
    format: 'an http(s) URL holding `{traceId}`',
    description:
      "where the operator's page links each turn, dead letter and finding: a trace in Jaeger (`https://jaeger.example.com/trace/{traceId}`) or Grafana Tempo; `{traceId}` is replaced by the 32 hex digits",
  },
  THREADLINE_TRACE_FILE_MAX_BYTES: {
    kind: 'integer',
    group: 'traces',
    default: 64 * MIB,
    min: 64 * 1024,
    max: 2 ** 40,
    description: 'no trace file grows past this size: it is rotated before a batch would take it past, a larger batch is split over lines, and a span larger on its own is dropped (counted in `threadline.trace_file.spans_dropped`); `threadline misroutes` and `trace` skip a longer line (and any past 256 MiB)',
  },
  THREADLINE_TRACE_FILE_KEEP: {
    kind: 'integer',
    group: 'traces',
    default: 4,
    min: 1,
    max: 100,
    description: 'trace files kept, the live one included: `traces.jsonl`, `traces.jsonl.1` (newest) and so on',
  },
  THREADLINE_REJECT_SPANS_PER_SECOND: {
    kind: 'integer',
    group: 'traces',
    default: 10,
    min: 0,
    max: 1_000_000,
    description: '`gateway.reject` spans recorded a second; the rest are counted, not recorded; `0`: none',
  },

  // Metrics
  OTEL_METRICS_EXPORTER: {
    kind: 'choice',
    group: 'metrics',
    choices: ['otlp', 'prometheus', 'console', 'none'],
    default: 'none',
    defaultText: '`none`, or `otlp` when an OTLP endpoint is set',
    description: 'where metrics go; one value, not a comma-separated list; `prometheus` serves a scrape endpoint',
  },
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: {
    kind: 'url',
    group: 'metrics',
    default: undefined,
    defaultText: 'unset (the general endpoint, plus `/v1/metrics` over HTTP)',
    description: 'the collector for metrics alone; setting it switches metrics to `otlp`',
  },
  OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: {
    kind: 'choice',
    group: 'metrics',
    choices: OTLP_PROTOCOLS,
    default: 'http/protobuf',
    defaultText: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    description: 'the OTLP encoding for metrics alone',
  },
  OTEL_EXPORTER_PROMETHEUS_HOST: {
    kind: 'text',
    group: 'metrics',
    default: '127.0.0.1',
    format: 'an address',
    description: 'where the Prometheus scrape endpoint listens',
  },
  OTEL_EXPORTER_PROMETHEUS_PORT: {
    kind: 'integer',
    group: 'metrics',
    default: 9464,
    min: 0,
    max: 65535,
    description: 'the Prometheus scrape port (`/metrics`)',
  },
  OTEL_METRIC_EXPORT_INTERVAL: {
    kind: 'integer',
    group: 'metrics',
    default: 60_000,
    min: 100,
    max: 86_400_000,
    description: 'milliseconds between exports of the push exporters (`otlp`, `console`); an export may take this long or 30 s, whichever is less (`OTEL_METRIC_EXPORT_TIMEOUT` is not read)',
  },

  ...otlpSignalSettings('METRICS', 'metrics', 'metrics'),
  OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: {
    kind: 'choice',
    group: 'metrics',
    choices: ['cumulative', 'delta', 'lowmemory'],
    default: 'cumulative',
    readBySdk: true,
    spaceSensitive: true,
    description: 'the aggregation temporality of OTLP metric exports; `delta` for backends that want it',
  },

  // Propagation and baggage
  OTEL_PROPAGATORS: {
    kind: 'text',
    group: 'propagation',
    default: 'tracecontext,baggage',
    format: 'comma-separated: `tracecontext`, `baggage`, `b3`, `b3multi`, `jaeger`, or `none` alone',
    description: "the standard propagators; threadline's session propagation stays on whatever they are",
  },
  THREADLINE_BAGGAGE_KEYS: {
    kind: 'text',
    group: 'propagation',
    default: DEFAULT_OUTBOUND_POLICY.keys.join(','),
    emptyIsValue: true,
    format: 'comma-separated threadline keys',
    description: 'threadline keys sent as baggage to hosts no rule matches; empty sends none',
  },
  THREADLINE_BAGGAGE_HOSTS: {
    kind: 'text',
    group: 'propagation',
    default: undefined,
    format: '`host=key,key;*.suffix=key`',
    description: 'per-host rules, first match wins, e.g. `api.example.com=chat.id,session.id;*.internal=chat.platform,chat.id`',
  },
  THREADLINE_INBOUND_BAGGAGE: {
    kind: 'text',
    group: 'propagation',
    default: 'none',
    format: '`none`, `all` or comma-separated keys',
    description: "foreign inbound baggage every platform keeps for the turn; threadline's own keys are always dropped",
  },

  // Privacy and logs
  THREADLINE_SPAN_PRIVACY: {
    kind: 'choice',
    group: 'privacy',
    choices: ['plain', 'hmac', 'off'],
    default: 'plain',
    description: 'chat and user ids on spans and logs: as they are, pseudonymized with the HMAC key, or left off',
  },
  THREADLINE_SPAN_HMAC_KEY: {
    kind: 'text',
    group: 'privacy',
    default: undefined,
    secret: true,
    untrimmed: true,
    format: 'at least 16 bytes',
    description: 'the key for `hmac` privacy; keep it stable, or every pseudonym changes',
  },
  THREADLINE_SPAN_CHAT_NAME: {
    kind: 'flag',
    group: 'privacy',
    default: false,
    description: '`1`: also stamp `chat.name` (plain privacy only)',
  },
  THREADLINE_LOG_LEVEL: {
    kind: 'choice',
    group: 'privacy',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    description: 'the pino log level',
  },
  THREADLINE_LOG_NAMES: {
    kind: 'flag',
    group: 'privacy',
    default: false,
    description: '`1`: log chat and user names instead of redacting them (plain privacy only)',
  },
  OTEL_LOGS_EXPORTER: {
    kind: 'text',
    group: 'privacy',
    default: 'none',
    format: 'comma-separated: `otlp`, `console`, `none`',
    description: '`otlp`: every log record also goes to the collector as an OpenTelemetry log, with the trace and span it was written in, redacted as on stdout. Read as the SDK reads it: `none` anywhere turns export off; `console` is noted and left out, as stdout has every record already. OpenTelemetry\'s own warnings go to stdout only (`OTEL_LOG_LEVEL` is not read)',
  },
  OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: {
    kind: 'url',
    group: 'privacy',
    default: undefined,
    readBySdk: true,
    defaultText: 'unset (the general endpoint, plus `/v1/logs` over HTTP)',
    description: 'the collector for logs alone (with `OTEL_LOGS_EXPORTER=otlp`; without it the value is not checked, as nothing reads it)',
  },
  OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: {
    kind: 'choice',
    group: 'privacy',
    choices: OTLP_PROTOCOLS,
    default: 'http/protobuf',
    defaultText: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    description: 'the OTLP encoding for logs alone',
  },
  ...otlpSignalSettings('LOGS', 'logs', 'privacy'),
  OTEL_BLRP_SCHEDULE_DELAY: {
    kind: 'integer',
    group: 'privacy',
    default: 1_000,
    min: 0,
    max: 3_600_000,
    description: 'milliseconds between two log exports',
  },
  OTEL_BLRP_EXPORT_TIMEOUT: {
    kind: 'integer',
    group: 'privacy',
    default: 30_000,
    min: 1,
    max: 3_600_000,
    description: 'milliseconds one log export may take before it is abandoned',
  },
  OTEL_BLRP_MAX_QUEUE_SIZE: {
    kind: 'integer',
    group: 'privacy',
    default: 2_048,
    min: 1,
    max: 10_000_000,
    description: 'log records waiting for export before new ones are dropped (stdout still has them)',
  },
  OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: {
    kind: 'integer',
    group: 'privacy',
    default: 512,
    min: 1,
    max: 1_000_000,
    description: 'log records in one export',
  },
  OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT: {
    kind: 'integer',
    group: 'privacy',
    default: 128,
    min: 0,
    max: 1_000_000,
    defaultText: '`OTEL_ATTRIBUTE_COUNT_LIMIT`',
    description: 'attributes kept on one exported log record',
  },
  OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT: {
    kind: 'text',
    group: 'privacy',
    default: undefined,
    defaultText: '`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`',
    format: 'a whole number of characters',
    description: 'string attribute values of exported log records are cut to this length',
  },

  // Tools and background work
  THREADLINE_TERMINAL: {
    kind: 'flag',
    group: 'tools',
    default: false,
    description: '`1`: enable the terminal tool (`/run`, `/jobs`, `/kill`), which runs shell commands on this host as the gateway\'s user; admins only',
  },
  THREADLINE_TERMINAL_ENV: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: 'none',
    format: 'comma-separated variable names',
    description:
      "names of further environment variables a command gets, comma-separated (say `AWS_PROFILE`); otherwise only the shell's own (`PATH`, `HOME`, `LANG`…), the settings that are no secrets, URLs or the admins, and the session's; naming a secret is refused",
  },
  THREADLINE_SEND_PLATFORMS: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: '`webhook`, and `telegram`, `slack` and `matrix` when their tokens are set',
    format: 'comma-separated platform names',
    description:
      "the platforms `threadline send` may address. The gateway sets it for the commands it runs to the platforms it enabled, since their environment holds no token to tell by; set it yourself for a script run outside the gateway",
  },
  THREADLINE_SEND_STORE: {
    // Text, not a choice: only `threadline send` reads it, and refuses any other value.
    kind: 'text',
    group: 'tools',
    default: 'auto',
    format: '`auto`, `sqlite` or `redis`',
    description:
      "where `threadline send` records its message: `redis`, the outbox on `THREADLINE_REDIS_URL` (refused, exit 1, without it); `sqlite`, the store in `THREADLINE_DATA_DIR`; `auto`, Redis when `THREADLINE_REDIS_URL` is set. The gateway sets it for the commands it runs, with its own `THREADLINE_DATA_DIR` and `THREADLINE_REDIS_PREFIX`, and `THREADLINE_REDIS_URL` when that holds no credentials (no user, password or query)",
  },
  THREADLINE_TERMINAL_USER: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: "the gateway's own",
    format: 'a user name or uid',
    description:
      "an unprivileged account commands run as (say `nobody`), in its home (or the temporary directory), so a command cannot read the gateway's memory or `/proc/<pid>/environ`; needs the gateway to run as root; root itself is refused",
  },
  THREADLINE_TERMINAL_TIMEOUT_S: {
    kind: 'integer',
    group: 'tools',
    default: 60,
    min: 1,
    max: 3600,
    description: 'a foreground command is killed (its whole process group) after this many seconds',
  },
  THREADLINE_TERMINAL_TAIL_CHARS: {
    kind: 'integer',
    group: 'tools',
    default: 3000,
    min: 100,
    max: 30_000,
    description: 'the tail of a command\'s output shown in a reply or notification, in characters',
  },
  THREADLINE_TERMINAL_OUTPUT_MAX_BYTES: {
    kind: 'integer',
    group: 'tools',
    default: 16 * MIB,
    min: 64 * 1024,
    max: 2 ** 34,
    description: 'a background command\'s captured output (stdout and stderr) is cut at this size: the rest is read and discarded, and a marker line says how much; the files it writes are not limited',
  },
  THREADLINE_TERMINAL_MIN_CHECK_INTERVAL_S: {
    kind: 'integer',
    group: 'tools',
    default: 30,
    min: 1,
    max: 86_400,
    description: 'the shortest `check_interval` (`/run --every`) a background command may ask for',
  },
  THREADLINE_TERMINAL_MAX_PER_CHAT: {
    kind: 'integer',
    group: 'tools',
    default: 10,
    min: 1,
    max: 100_000,
    description: 'background commands one chat and thread may have running (or ended and not yet reported)',
  },
  THREADLINE_TERMINAL_MAX_TOTAL: {
    kind: 'integer',
    group: 'tools',
    default: 200,
    min: 1,
    max: 100_000,
    description: 'background commands the gateway may have running (or ended and not yet reported) in all',
  },
  THREADLINE_CRON_MAX_PER_CHAT: {
    kind: 'integer',
    group: 'tools',
    default: 25,
    min: 1,
    max: 100_000,
    description: 'reminders one chat may have scheduled, across its threads (jobs admins schedule with `/cron` or `schedule` are not capped per chat)',
  },
  THREADLINE_CRON_MAX_PER_USER: {
    kind: 'integer',
    group: 'tools',
    default: 10,
    min: 1,
    max: 100_000,
    description: 'reminders one user may have scheduled, across chats',
  },
  THREADLINE_CRON_MAX_TOTAL: {
    kind: 'integer',
    group: 'tools',
    default: 10_000,
    min: 1,
    max: 1_000_000,
    description: 'reminders and cron jobs the gateway may have scheduled in all',
  },
  THREADLINE_CRON_ADMIN_RESERVE_PERCENT: {
    kind: 'integer',
    group: 'tools',
    default: 10,
    min: 0,
    max: 90,
    description: "share of `THREADLINE_CRON_MAX_TOTAL` only admins' jobs (`/cron`, `schedule`) may fill, so users' reminders never lock admins out",
  },
  THREADLINE_SKILLS_DIR: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: '`$THREADLINE_DATA_DIR/skills`',
    format: 'a directory',
    description: 'where skills live: Markdown files with YAML front matter (`name`, `description`, `platforms`)',
  },
  THREADLINE_SKILLS_DISABLED: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: 'none',
    format: 'comma-separated `platform:skill` (`*:skill` for every platform)',
    description: 'skills left out of the system prompt and `/skills` on a platform',
  },
  THREADLINE_TTS_VOICE: {
    kind: 'text',
    group: 'tools',
    default: 'en',
    format: 'an espeak-ng voice name',
    description: 'the voice `/tts` speaks with (`espeak-ng --voices` lists them)',
  },
  THREADLINE_TTS_MAX_CHARS: {
    kind: 'integer',
    group: 'tools',
    default: 1000,
    min: 1,
    max: 10_000,
    description: 'the longest text `/tts` speaks; the audio must also fit in 1 MiB',
  },
  THREADLINE_CONFIG: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: '`threadline.config.js` (or `.mjs`) in the working directory, if there is one',
    format: 'a path to an ES module (`threadline start --config <path>` sets it)',
    description:
      'your tools, agent and MCP servers: the module\'s default export, `defineGatewayConfig({ tools, agent, mcpServers })` (see docs/agents.md); a path set here that does not exist stops the start',
  },
  THREADLINE_MCP_SERVERS: {
    kind: 'text',
    group: 'tools',
    default: undefined,
    defaultText: 'unset (no MCP servers)',
    format: 'a path to a JSON file: `{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers"}}}`',
    description:
      "MCP servers whose tools the model may call, as `<server>__<tool>` (see docs/tools.md); each is connected at start, and one that does not connect stops the start. A stdio server gets only its `env` (and PATH, HOME and a few more), never the gateway's variables",
  },
  THREADLINE_MCP_TIMEOUT_MS: {
    kind: 'integer',
    group: 'tools',
    default: 60_000,
    min: 1_000,
    max: 3_600_000,
    description: 'how long an MCP server may take to connect, to list its tools, or to answer one tool call',
  },

  // LLM agent
  THREADLINE_LLM_BASE_URL: {
    kind: 'url',
    group: 'llm',
    default: undefined,
    defaultText: 'unset (no LLM: the default agent echoes)',
    description: 'an OpenAI-compatible API (e.g. `https://api.openai.com/v1`); set, text that is not a command goes to the model',
  },
  THREADLINE_LLM_MODEL: {
    kind: 'text',
    group: 'llm',
    default: 'gpt-4o-mini',
    format: 'a model name',
    description: 'the model asked for (`gen_ai.request.model`)',
  },
  THREADLINE_LLM_API_KEY: {
    kind: 'text',
    group: 'llm',
    default: undefined,
    secret: true,
    description: 'the API key sent as a bearer token; never logged or put on spans',
  },
  THREADLINE_LLM_TIMEOUT_MS: {
    kind: 'integer',
    group: 'llm',
    default: 60_000,
    min: 1_000,
    max: 600_000,
    description: 'one model request, its streamed answer included, may take this long',
  },
  THREADLINE_LLM_MAX_TOOL_ROUNDS: {
    kind: 'integer',
    group: 'llm',
    default: 8,
    min: 1,
    max: 50,
    description: 'rounds of tool calls one turn may make (then one more request for the answer); at most 16 calls an answer',
  },
  THREADLINE_LLM_HISTORY_MESSAGES: {
    kind: 'integer',
    group: 'llm',
    default: 40,
    min: 2,
    max: 1_000,
    description: 'messages of a session\'s history kept in the store and sent to the model',
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];
