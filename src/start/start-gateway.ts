import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Agent } from '../agent/agent.js';
import { ThreadlineError, messageOf } from '../errors.js';
import { CommandAgent } from '../gateway/commands/command-agent.js';
import { commandsFirst } from '../gateway/commands/commands-first.js';
import { systemClock, type Clock } from '../tools/clock.js';
import type { Deliverer } from '../tools/deliver-later.js';
import { createToolbox, type Toolbox } from '../tools/toolbox.js';
import type { Tool } from '../tools/tool.js';
import { connectMcpServers } from '../tools/mcp/connect-mcp-servers.js';
import { parseMcpServers, type McpServerConfig } from '../tools/mcp/mcp-servers-config.js';
import type { Platform } from '../platforms/platform.js';
import { WebhookPlatform } from '../platforms/webhook/webhook-platform.js';
import { recordBackend } from '../store/data-dir-backend.js';
import { acquireDataDirLock } from '../store/data-dir-lock.js';
import { StoreWrites } from '../store/store-writes.js';
import type { AnyStore } from '../store/store.js';
import type { RedisBackend } from '../queue/redis-backend.js';
import { commandSettings } from './command-settings.js';
import { openBackend } from './open-backend.js';
import { assertContextPropagation } from '../session/assert-context-propagation.js';
import { Gateway } from '../gateway/gateway.js';
import type { GatewayConfig } from '../gateway/gateway-config.js';
import { buildServer } from '../gateway/server.js';
import { stopGateway } from '../gateway/stop-gateway.js';
import { registerOperatorPage } from '../operator/operator-routes.js';

export interface RunningGateway {
  readonly url: string;
  readonly gateway: Gateway;
  readonly server: FastifyInstance;
  readonly platforms: readonly Platform[];
  /** Its store: messages, the outbox, homes, conversations and what the tools keep. */
  readonly store: AnyStore;
  /** The tools, and the background work (watchers, the scheduler) they keep. */
  readonly toolbox: Toolbox;
  /** The time background work runs on. */
  readonly clock: Clock;
  /** Stops intake, finishes work, closes the server and store, all within the shutdown timeout (see stopGateway). */
  stop(): Promise<void>;
}

export interface GatewayParts {
  readonly logger: Logger;
  /** Default: SQLite in the data dir, or Redis with THREADLINE_REDIS_URL (then with its queues). */
  readonly store?: AnyStore;
  /** Default: the command agent, behind the LLM agent when THREADLINE_LLM_BASE_URL is set. Given the toolbox when a function. */
  readonly agent?: Agent | ((toolbox: Toolbox) => Agent);
  /** Default: the system clock. A test passes a ManualClock to move reminders and progress checks on. */
  readonly clock?: Clock;
  /** Your own tools (defineTool), offered beside the built-in ones. */
  readonly tools?: readonly Tool[];
  /** MCP servers by name, as in a THREADLINE_MCP_SERVERS file's `mcpServers`; their tools join the others. */
  readonly mcpServers?: Readonly<Record<string, McpServerConfig>>;
}

/**
 * Builds and starts the whole gateway from its configuration. The data dir's lock comes
 * first, so a second gateway on it stops before touching anything; the server listens
 * before anything is replayed, so a port in use fails before a delivery is sent again.
 */
export async function startGateway(config: GatewayConfig, parts: GatewayParts): Promise<RunningGateway> {
  // Without a context manager every turn would lose its session after its first await.
  await assertContextPropagation();
  if (config.unauthenticatedOffLoopback) {
    parts.logger.warn(
      { host: config.host },
      'webhook intake takes messages with no token on a non-loopback HOST (THREADLINE_ALLOW_UNAUTHENTICATED=1): ' +
        'set THREADLINE_WEBHOOK_TOKEN unless something in front authenticates callers',
    );
  }
  if (parts.store !== undefined) return assemble(config, parts, parts.store, () => {});
  const lock = acquireDataDirLock(config.dataDir);
  let store: AnyStore | undefined;
  try {
    const backend = await openBackend(config, parts.logger);
    store = backend.store;
    recordBackend(lock.dataDir, backend.kind);
    if (backend.kind === 'sqlite') return await assemble(config, parts, store, () => lock.release());
    // Beating before the tools start: another instance must never find this one's commands ownerless.
    await backend.redis.heartbeat.start();
    return await assemble(config, parts, store, () => lock.release(), backend.redis);
  } catch (error) {
    // A start that failed (a port in use, say) must not leave the store open.
    await store?.close().catch(() => {});
    lock.release();
    throw error;
  }
}

/** The gateway with the MCP servers' tools: connected before the toolbox is made, closed after the gateway stops or fails to start. */
async function assemble(config: GatewayConfig, parts: GatewayParts, store: AnyStore, unlock: () => void, backend?: RedisBackend): Promise<RunningGateway> {
  const servers = { ...config.tools.mcp.servers };
  for (const [name, server] of Object.entries(parseMcpServers(parts.mcpServers ?? {}, 'GatewayParts.mcpServers'))) {
    if (Object.hasOwn(servers, name)) throw new ThreadlineError('TL_CONFIG_INVALID', `MCP server "${name}" is configured twice: in THREADLINE_MCP_SERVERS and in GatewayParts.mcpServers`);
    servers[name] = server;
  }
  const mcp = await connectMcpServers(servers, { logger: parts.logger, timeoutMs: config.tools.mcp.timeoutMs, taken: (parts.tools ?? []).map(({ name }) => name) });
  try {
    const running = await assembleGateway(config, { ...parts, tools: [...(parts.tools ?? []), ...mcp.tools] }, store, unlock, backend);
    return { ...running, stop: () => running.stop().finally(() => mcp.close()) };
  } catch (error) {
    await mcp.close();
    throw error;
  }
}

async function assembleGateway(
  config: GatewayConfig,
  parts: GatewayParts,
  given: AnyStore,
  unlock: () => void,
  /** With THREADLINE_REDIS_URL: the queues, the instances' heartbeats and leases. */
  backend?: RedisBackend,
): Promise<RunningGateway> {
  const { logger } = parts;
  // Every write, the tools' too, tells readiness whether the store takes writes.
  const storeWrites = new StoreWrites(logger);
  const store = storeWrites.watched(given);
  const platforms: Platform[] = [new WebhookPlatform({ ...config.webhook, idempotencyTtlMs: config.webhookIdempotencyMs, logger, keepBaggage: config.inboundBaggage })];
  // Each platform's module is loaded only when it is on: their SDKs take a third of a second to load, all together.
  if (config.telegram !== undefined) {
    const { TelegramPlatform } = await import('../platforms/telegram/telegram-platform.js');
    // Long polling on one instance at a time: two pollers steal each other's updates (409 Conflict).
    const pollingLease = backend !== undefined && config.telegram.mode === 'polling' ? { pollingLease: backend.leases } : {};
    platforms.push(new TelegramPlatform({ ...config.telegram, logger, keepBaggage: config.inboundBaggage, ...pollingLease }));
  }
  if (config.slack !== undefined) {
    const { SlackPlatform } = await import('../platforms/slack/slack-platform.js');
    platforms.push(new SlackPlatform({ ...config.slack, logger, keepBaggage: config.inboundBaggage }));
  }
  if (config.mattermost !== undefined) {
    const { MattermostPlatform } = await import('../platforms/mattermost/mattermost-platform.js');
    // One websocket at a time: two would each take every post.
    const lease = backend === undefined ? {} : { lease: backend.leases };
    platforms.push(new MattermostPlatform({ ...config.mattermost, logger, keepBaggage: config.inboundBaggage, syncTokens: store.syncTokens, ...lease }));
  }
  if (config.matrix !== undefined) {
    const { MatrixPlatform } = await import('../platforms/matrix/matrix-platform.js');
    // One /sync loop at a time: two would take each batch twice and move the token under each other.
    const syncLease = backend === undefined ? {} : { syncLease: backend.leases };
    platforms.push(new MatrixPlatform({ ...config.matrix, logger, keepBaggage: config.inboundBaggage, syncTokens: store.syncTokens, ...syncLease }));
  }
  if (config.discord !== undefined) {
    const { DiscordPlatform } = await import('../platforms/discord/discord-platform.js');
    // One Gateway connection at a time: two would each get every message. Its session is kept in the store for the next one.
    const gatewayLease = backend === undefined ? {} : { gatewayLease: backend.leases };
    platforms.push(new DiscordPlatform({ ...config.discord, logger, keepBaggage: config.inboundBaggage, syncTokens: store.syncTokens, ...gatewayLease }));
  }
  const clock = parts.clock ?? systemClock;
  // The router exists once the gateway does; tools only deliver after start(), so this late binding is safe.
  let router: Deliverer | undefined;
  const deliverer: Deliverer = { deliver: (request) => router!.deliver(request) };
  const platformNames = platforms.map(({ name }) => name);
  const storeKind = parts.store !== undefined ? 'given' : backend === undefined ? 'sqlite' : 'redis';
  const toolbox = createToolbox(
    {
      deliverer,
      store,
      clock,
      logger,
      dataDir: config.dataDir,
      platforms: new Set(platformNames),
      commandSettings: commandSettings(config, platformNames, storeKind),
      ...(config.redis === undefined ? {} : { instance: config.redis.instanceId, ...(backend === undefined ? {} : { instances: backend.heartbeat }) }),
    },
    config.tools,
    { schedules: backend?.schedules, tools: parts.tools },
  );
  const agent = typeof parts.agent === 'function' ? parts.agent(toolbox) : (parts.agent ?? (await defaultAgent(config, toolbox, store, logger)));
  const gateway = new Gateway({
    store,
    storeWrites,
    ...(backend === undefined ? {} : { queues: backend.queues, suitability: backend.suitability }),
    platforms,
    agent,
    logger,
    concurrency: config.concurrency,
    queueCapacity: config.queueCapacity,
    perUserGroupSessions: config.perUserGroupSessions,
    strictRouting: config.strictRouting,
    admins: config.admins,
    presence: config.presence,
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
  router = gateway.router;
  // From before the replay: a Redis turned evicting since it was opened refuses intake from the start.
  backend?.suitability.start(gateway.metrics);
  const server = buildServer(gateway, platforms, logger, config.http);
  registerOperatorPage(server, { gateway, store, config: config.operator, logger });
  const address = await server.listen({ port: config.port, host: config.host }).catch((error: unknown) => {
    const code = (error as { code?: unknown } | null)?.code;
    throw new ThreadlineError('TL_LISTEN_FAILED', `Cannot listen on ${config.host}:${config.port} (${String(code ?? messageOf(error))}): stop what holds the port, or set PORT or HOST`, {
      cause: error,
    });
  });
  // Listening is not ready: until intake opens, messages get 503 TL_STARTING and /v1/ready 503.
  logger.info({ url: address }, 'accepting connections; ready once what an earlier process left is queued again');
  try {
    // Before replay and intake: a replayed /run's new command directory is no leftover to clean up.
    await toolbox.adopt();
    await gateway.start();
    await toolbox.start();
  } catch (error) {
    await toolbox.stop().catch(() => {});
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
    store,
    toolbox,
    clock,
    stop: () => stopGateway({ platforms, background: toolbox, gateway, server, store }, config.shutdownTimeoutMs, logger).finally(unlock),
  };
}

/** The command agent; with a model configured, the LLM agent in front of it. */
async function defaultAgent(config: GatewayConfig, toolbox: Toolbox, store: AnyStore, logger: Logger): Promise<Agent> {
  const commands = new CommandAgent(toolbox.tools, async (destination) => {
    const [processes, schedules] = await Promise.all([store.processes.ofDestination(destination), store.schedules.ofDestination(destination)]);
    // An ended command is kept only until its report is sent: it no longer runs.
    return { commands: processes.filter((record) => record.exit === undefined).length, schedules: schedules.length };
  });
  const { llm } = config.tools;
  if (llm === undefined) return commands;
  // Loaded only with a model configured, as the model's client library is.
  const { LlmAgent } = await import('../agent/llm/llm-agent.js');
  const model = new LlmAgent({
    config: llm,
    tools: [...toolbox.tools.values()],
    history: store.history,
    systemPrompt: () => toolbox.skills.systemPrompt(),
    logger,
  });
  return commandsFirst(commands, model);
}
