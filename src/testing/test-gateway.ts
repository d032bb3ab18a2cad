import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Agent } from '../agent/agent.js';
import type { DeliveryRecord } from '../session/delivery.js';
import { readGatewayConfig, type GatewayConfig } from '../gateway/gateway-config.js';
import { startGateway, type GatewayParts, type RunningGateway } from '../start/start-gateway.js';
import type { WebhookMessageBody } from '../platforms/webhook/webhook-schema.js';
import { names, withSession, type SessionInput } from '../session/index.js';
import { ManualClock } from '../tools/clock.js';
import { executeTool } from '../tools/execute-tool.js';
import type { Tool, ToolResult } from '../tools/tool.js';
import type { Toolbox } from '../tools/toolbox.js';
import { ThreadlineError } from '../errors.js';
import { createLogger } from '../telemetry/logger.js';
import { slackSignature } from '../platforms/slack/slack-signature.js';
import { DeliveryReceiver } from './delivery-receiver.js';
import { FakeMattermost } from './fake-mattermost.js';
import { FakeMatrix } from './fake-matrix.js';
import { FakeDiscord } from './fake-discord.js';
import { FakeSlack } from './fake-slack.js';
import { FakeTelegram } from './fake-telegram.js';
import { installTestMetrics, type CollectedMetrics } from './test-metrics.js';
import { installTestTelemetry, type TestTelemetry } from './test-telemetry.js';
import { misroutesIn } from './test-misroutes.js';
import type { Misroute } from '../forensics/findings.js';

export interface TestGatewayOptions {
  /** Extra configuration variables, as the gateway would read them from the environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Default: the gateway's own (commands, and the LLM agent with `llmBaseUrl`). Given the toolbox when a function. */
  readonly agent?: Agent | ((toolbox: Toolbox) => Agent);
  /** Enable Telegram against a local fake Bot API (webhook mode unless `polling`). */
  readonly telegram?: boolean | 'polling';
  /** Enable Slack against a local fake Web API. */
  readonly slack?: boolean;
  /** Enable Mattermost against a local fake server (REST and websocket); started once its websocket is connected. */
  readonly mattermost?: boolean;
  /** Enable Matrix against a local fake homeserver; started once the bot's /sync reads on from a stored token. */
  readonly matrix?: boolean;
  /** Enable Discord against a local fake (REST API and Gateway); started once the bot is connected. */
  readonly discord?: boolean;
  /**
   * `manual`: reminders, cron runs and progress checks wait for `advanceTime()` instead of the
   * wall clock (deliveries and their retries still run in real time). Refused with
   * THREADLINE_REDIS_URL (TL_CONFIG_INVALID): there BullMQ times reminders and cron runs.
   */
  readonly clock?: 'system' | 'manual';
  /** An OpenAI-compatible endpoint for the LLM agent, e.g. a FakeOpenAI's `baseUrl`. */
  readonly llmBaseUrl?: string;
  /** Your own tools (defineTool), offered beside the built-in ones. */
  readonly tools?: readonly Tool[];
  /** MCP servers whose tools the gateway offers (GatewayParts.mcpServers), e.g. a startTestMcpServer()'s `url` or `stdio`. */
  readonly mcpServers?: GatewayParts['mcpServers'];
  /**
   * THREADLINE_WEBHOOK_TOKEN (`true`: TEST_SECRETS.webhookToken), which `send()` then presents
   * unless given an authorization header: webhook senders are authenticated, so their user
   * ids can name admins (the terminal with THREADLINE_ADMINS=* needs it).
   */
  readonly webhookToken?: string | true;
}

/** Secrets the test gateway's platforms are configured with. */
export const TEST_SECRETS = {
  telegramToken: '123456:test-token',
  telegramWebhookSecret: 'telegram-secret',
  slackBotToken: 'xoxb-test',
  slackSigningSecret: 'slack-signing-secret',
  webhookToken: 'test-webhook-token-0123456789',
  mattermostToken: 'mattermost-test-token',
  matrixAccessToken: 'matrix-test-token',
  discordBotToken: 'discord-test-token',
} as const;

export interface SendResult {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export interface ExpectedRouting {
  readonly chatId: string;
  readonly threadId?: string | undefined;
}

/** A gateway running in this process for a test, with everything it talks to. */
export interface TestGateway {
  readonly url: string;
  readonly receiver: DeliveryReceiver;
  readonly telegram: FakeTelegram | undefined;
  readonly slack: FakeSlack | undefined;
  /** The fake Mattermost: `mattermost.userPost()` writes as a user; what the bot posted is recorded. */
  readonly mattermost: FakeMattermost | undefined;
  /** The fake homeserver: `matrix.postMessage()` writes into a room or thread as a user; what the bot sent is recorded. */
  readonly matrix: FakeMatrix | undefined;
  /** The fake Discord: `discord.userMessage()` writes as a user, what the bot sent is recorded. */
  readonly discord: FakeDiscord | undefined;
  readonly telemetry: TestTelemetry;
  /** The gateway now running (a new one after `restart()`). */
  readonly running: RunningGateway;
  /** Its data directory: the SQLite store and its lock. */
  readonly dataDir: string;
  /** The manual clock, when started with `clock: 'manual'`. */
  readonly clock: ManualClock | undefined;
  /**
   * Moves the manual clock on by `ms`: every reminder, cron run and progress check due by then
   * runs, in time order. Resolves once their deliveries are recorded in the outbox (await
   * `receiver.waitFor(n)` for their arrival). Throws without `clock: 'manual'`.
   */
  advanceTime(ms: number): Promise<void>;
  /**
   * Calls a tool as the gateway would inside a turn of `session` (an execute_tool span, the
   * session in the context), without a message: for testing a tool and what it delivers later.
   * The caller counts as an admin.
   */
  runTool(name: string, args: Record<string, unknown>, session: SessionInput): Promise<ToolResult>;
  /** POSTs a webhook message as the given chat and thread. */
  send(message: WebhookMessageBody, headers?: Readonly<Record<string, string>>): Promise<SendResult>;
  /** POSTs a Telegram update to the webhook with the configured secret (or `secret`). */
  sendTelegram(update: object, secret?: string): Promise<SendResult>;
  /** POSTs a Slack Events API body, signed with the signing secret (or `signingSecret`). */
  sendSlack(body: object, signingSecret?: string): Promise<SendResult>;
  /** POSTs a Discord interaction (`discord.slashCommand(…)`) to the Interactions endpoint, signed as Discord signs it (or `forged`). */
  sendDiscordInteraction(interaction: object, options?: { readonly forged?: boolean; readonly timestamp?: number }): Promise<SendResult>;
  /** POSTs an interaction payload (FakeSlack.buttonPress) to the Slack interactivity URL, form-encoded and signed. */
  sendSlackInteraction(payload: object, signingSecret?: string): Promise<SendResult>;
  /** Resolves with the trace's spans once spans of all `names` have ended. */
  waitForSpans(traceId: string, names: readonly string[], timeoutMs?: number): Promise<ReadableSpan[]>;
  /**
   * Waits for the message's trace to finish (its gateway.message span ends last), then lists
   * the spans that do not carry the expected chat.id and chat.thread.id: [] when all do.
   */
  routingProblems(traceId: string, expected: ExpectedRouting): Promise<string[]>;
  /**
   * threadline's metrics, collected now, as an exporter would see them: counters count for
   * the whole process (every test gateway it started adds to them), gauges read the running
   * gateway. Throws when another meter provider was registered before the first test gateway.
   */
  metrics(): Promise<CollectedMetrics>;
  /**
   * The misroutes among the spans this process has ended so far (every test gateway's), as
   * `threadline misroutes` finds them: [] when every delivery went where its work came from.
   * Await the deliveries first (`receiver.waitFor`), so their spans have ended.
   */
  misroutes(): Promise<Misroute[]>;
  /** The newest deliveries in the outbox (failed ones only, of one chat, if asked): status, attempts, last error. */
  deliveries(filter?: { failedOnly?: boolean; chatId?: string; limit?: number }): Promise<DeliveryRecord[]>;
  /**
   * Stops the gateway as SIGTERM would and starts a new one on the same data dir, fakes and
   * receiver: what a deploy or a crash recovery does. The URL changes (a new ephemeral port).
   * `whileDown` runs between the two: what users write while no gateway runs.
   */
  restart(whileDown?: () => void | Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a gateway on an ephemeral loopback port with a temporary SQLite store, spans in
 * memory and a local delivery receiver, for integration tests of threadline and of what
 * users build on it.
 */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  // BullMQ would time the runs by the wall clock and the tools their due times by this one: two clocks for one job.
  if (options.clock === 'manual' && (options.env?.['THREADLINE_REDIS_URL'] ?? '').trim() !== '') {
    throw new ThreadlineError(
      'TL_CONFIG_INVALID',
      "clock: 'manual' cannot be used with THREADLINE_REDIS_URL: BullMQ runs reminders and cron jobs by the wall clock; leave the clock to the system",
    );
  }
  const telemetry = installTestTelemetry();
  // Before the gateway is built: its instruments bind to the meter provider registered then.
  const metrics = installTestMetrics();
  const receiver = await DeliveryReceiver.start();
  const telegram = options.telegram ? await FakeTelegram.start() : undefined;
  const slack = options.slack ? await FakeSlack.start() : undefined;
  const mattermost = options.mattermost ? await FakeMattermost.start({ token: TEST_SECRETS.mattermostToken }) : undefined;
  const matrix = options.matrix ? await FakeMatrix.start({ accessToken: TEST_SECRETS.matrixAccessToken }) : undefined;
  const discord = options.discord ? await FakeDiscord.start({ token: TEST_SECRETS.discordBotToken }) : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'threadline-test-'));
  const webhookToken = options.webhookToken === true ? TEST_SECRETS.webhookToken : options.webhookToken;
  // A gateway that never starts (a refused configuration, a failed start) leaves no temp dir or fake server behind.
  const closeFakes = () => [receiver.close(), telegram?.close(), slack?.close(), mattermost?.close(), matrix?.close(), discord?.close()];
  const failedStart = async (error: unknown): Promise<never> => {
    // Settled, not all: a fake that fails to close leaves neither the dir behind nor the start's error unsaid.
    await Promise.allSettled(closeFakes());
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  };
  let config: GatewayConfig;
  try {
    config = readGatewayConfig({
      ...(telegram === undefined
        ? {}
        : {
            THREADLINE_TELEGRAM_BOT_TOKEN: TEST_SECRETS.telegramToken,
            THREADLINE_TELEGRAM_API_ROOT: telegram.apiRoot,
            THREADLINE_TELEGRAM_MODE: options.telegram === 'polling' ? 'polling' : 'webhook',
            THREADLINE_TELEGRAM_WEBHOOK_SECRET: TEST_SECRETS.telegramWebhookSecret,
          }),
      ...(slack === undefined
        ? {}
        : {
            THREADLINE_SLACK_BOT_TOKEN: TEST_SECRETS.slackBotToken,
            THREADLINE_SLACK_SIGNING_SECRET: TEST_SECRETS.slackSigningSecret,
            THREADLINE_SLACK_API_URL: slack.apiUrl,
          }),
      ...(mattermost === undefined ? {} : { THREADLINE_MATTERMOST_URL: mattermost.url, THREADLINE_MATTERMOST_TOKEN: TEST_SECRETS.mattermostToken }),
      ...(matrix === undefined ? {} : { THREADLINE_MATRIX_HOMESERVER_URL: matrix.homeserverUrl, THREADLINE_MATRIX_ACCESS_TOKEN: TEST_SECRETS.matrixAccessToken }),
      ...(discord === undefined
        ? {}
        : {
            THREADLINE_DISCORD_BOT_TOKEN: TEST_SECRETS.discordBotToken,
            THREADLINE_DISCORD_API_ROOT: discord.apiRoot,
            THREADLINE_DISCORD_PUBLIC_KEY: discord.publicKey,
            // The fake takes what it is sent at once: tests of many messages are not paced at Discord's 50 a second.
            THREADLINE_DISCORD_REQUESTS_PER_SECOND: '10000',
          }),
      PORT: '0',
      HOST: '127.0.0.1',
      THREADLINE_DATA_DIR: dataDir,
      THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
      THREADLINE_DELIVERY_BACKOFF_MS: '20',
      THREADLINE_DELIVERY_BACKOFF_MAX_MS: '200',
      ...(options.llmBaseUrl === undefined ? {} : { THREADLINE_LLM_BASE_URL: options.llmBaseUrl }),
      ...(webhookToken === undefined ? {} : { THREADLINE_WEBHOOK_TOKEN: webhookToken }),
      ...options.env,
    });
  } catch (error) {
    return failedStart(error);
  }
  const clock = options.clock === 'manual' ? new ManualClock() : undefined;
  const logger = createLogger({ level: process.env['THREADLINE_LOG_LEVEL'] ?? 'silent' });
  const startOnly = () =>
    startGateway(config, { logger, ...(options.agent ? { agent: options.agent } : {}), ...(clock ? { clock } : {}), ...(options.mcpServers ? { mcpServers: options.mcpServers } : {}), ...(options.tools ? { tools: options.tools } : {}) });
  const start = async () => {
    const connections = mattermost?.connections ?? 0;
    const syncs = matrix?.sinceSyncs ?? 0;
    const sessions = discord?.sessionsStarted ?? 0;
    const started = await startOnly();
    // Posts written before Mattermost's websocket is up would wait for a catch-up, messages
    // written before Matrix's first sync would be history, which a bot's first sync skips, and
    // messages written before the bot is connected to Discord would never reach it.
    await Promise.all([mattermost?.waitForConnections(connections + 1), matrix?.waitForSinceSyncs(syncs + 1), discord?.connected(sessions)]).catch(async (error: unknown) => {
      await started.stop();
      throw error;
    });
    return started;
  };
  let running = await start().catch(failedStart);

  async function post(path: string, body: string, headers: Readonly<Record<string, string>>): Promise<SendResult> {
    const response = await fetch(`${running.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await response.text();
    // Slack's interactivity answers an empty 200.
    return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>, headers: response.headers };
  }

  async function waitForSpans(traceId: string, wanted: readonly string[], timeoutMs = 10_000): Promise<ReadableSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = telemetry.spans(traceId);
      if (wanted.every((name) => spans.some((span) => span.name === name))) return spans;
      if (Date.now() > deadline) throw new Error(`Trace ${traceId} lacks ${wanted.join(', ')} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  return {
    get url() {
      return running.url;
    },
    receiver,
    telemetry,
    get running() {
      return running;
    },
    dataDir,
    clock,
    advanceTime: async (ms) => {
      if (clock === undefined) throw new Error("advanceTime needs startTestGateway({ clock: 'manual' })");
      await clock.advance(ms);
    },
    runTool: (name, args, session) => {
      const tool = running.toolbox.tools.get(name);
      if (tool === undefined) return Promise.reject(new ThreadlineError('TL_TOOL_DISABLED', `No tool "${name}" in this gateway`));
      return withSession(session, () => executeTool(tool, args, { signal: new AbortController().signal, authorize: async () => true }));
    },
    telegram,
    slack,
    mattermost,
    matrix,
    discord,
    send: (message, headers = {}) =>
      post('/v1/messages', JSON.stringify(message), webhookToken === undefined || 'authorization' in headers ? headers : { authorization: `Bearer ${webhookToken}`, ...headers }),
    sendTelegram: (update, secret = TEST_SECRETS.telegramWebhookSecret) =>
      post('/v1/telegram/webhook', JSON.stringify(update), { 'x-telegram-bot-api-secret-token': secret }),
    sendSlackInteraction: (payload, signingSecret = TEST_SECRETS.slackSigningSecret) => {
      const raw = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      const timestamp = String(Math.floor(Date.now() / 1000));
      return post('/v1/slack/interactions', raw, {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': slackSignature(signingSecret, timestamp, raw),
      });
    },
    sendSlack: (body, signingSecret = TEST_SECRETS.slackSigningSecret) => {
      const raw = JSON.stringify(body);
      const timestamp = String(Math.floor(Date.now() / 1000));
      return post('/v1/slack/events', raw, {
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': slackSignature(signingSecret, timestamp, raw),
      });
    },
    sendDiscordInteraction: (interaction, signing = {}) => {
      if (discord === undefined) throw new Error('sendDiscordInteraction needs startTestGateway({ discord: true })');
      const { body, headers } = discord.signInteraction(interaction, signing);
      return post('/v1/discord/interactions', body, headers);
    },
    waitForSpans,
    routingProblems: async (traceId, expected) => {
      const spans = await waitForSpans(traceId, ['gateway.message']);
      return spans
        .filter(
          (span) =>
            span.attributes[names.CHAT_ID] !== expected.chatId ||
            span.attributes[names.CHAT_THREAD_ID] !== expected.threadId,
        )
        .map(
          (span) =>
            `${span.name}: chat.id=${String(span.attributes[names.CHAT_ID])} chat.thread.id=${String(span.attributes[names.CHAT_THREAD_ID])}`,
        );
    },
    metrics: () => metrics.collect(),
    misroutes: () => misroutesIn(telemetry.spans()),
    deliveries: (filter = {}) => running.gateway.outbox.list({ limit: 1_000, ...filter }),
    restart: async (whileDown) => {
      await running.stop();
      await whileDown?.();
      running = await start();
    },
    stop: async () => {
      await running.stop();
      await Promise.all(closeFakes());
      // A background command killed at the end may still write its status as the directory goes (ENOTEMPTY): tried again.
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    },
  };
}
