import { context } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';
import { createScheduler, type Later, type ScheduleRunnerFactory } from './cron/index.js';
import { createSendMessage } from './send-message/index.js';
import { createSkills, type Skills } from './skills/index.js';
import { createTerminal } from './terminal/index.js';
import { createTts } from './tts/index.js';
import type { Tool } from './tool.js';
import type { BackgroundWork, ToolServices } from './tool-services.js';
import type { ToolsConfig } from './tools-config.js';

/** Every tool of a gateway, by name, and the background work they keep. */
export interface Toolbox extends BackgroundWork {
  /** What the tools' background work takes over at start-up; the gateway runs it before it replays a message. */
  adopt(): Promise<void>;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly skills: Skills;
}

/** How many history entries a conversation keeps when no model is configured (mirrors still land). */
const DEFAULT_HISTORY_KEEP = 40;

/** What the toolbox is given beside its services; default: the embedded parts. */
export interface ToolboxParts {
  /** Runs reminders and cron jobs: BullMQ's with several instances on Redis; default the Clock's. */
  readonly schedules?: ScheduleRunnerFactory | undefined;
  /** Tools beside the built-in ones: the user's own, and those of MCP servers. */
  readonly tools?: readonly Tool[] | undefined;
}

/** Builds every tool from the gateway's services; start() and stop() run their background work. */
export function createToolbox(services: ToolServices, config: ToolsConfig, parts: ToolboxParts = {}): Toolbox {
  const terminal = createTerminal(services, config.terminal);
  const cron = createScheduler(services, config.cron, parts.schedules);
  const skills = createSkills(config.skills, services.logger);
  const all: Tool[] = [
    ...terminal.tools,
    ...cron.tools,
    createSendMessage(services, { historyKeep: config.llm?.historyMessages ?? DEFAULT_HISTORY_KEEP }),
    createTts(config.tts),
    skills.tool,
    ...(parts.tools ?? []),
  ];
  const tools = new Map<string, Tool>();
  for (const tool of all.map((one) => withLater(one, cron.later))) {
    // Two tools of one name: the model could not tell which it calls.
    if (tools.has(tool.name)) throw new ThreadlineError('TL_CONFIG_INVALID', `Two tools are named ${tool.name}: give each tool a name of its own`);
    tools.set(tool.name, tool);
  }
  const background: BackgroundWork[] = [terminal.watchers, cron.scheduler];
  return {
    tools,
    skills,
    async adopt() {
      for (const work of background) await work.adopt?.();
    },
    async start() {
      for (const work of background) await work.start();
    },
    async stop() {
      await Promise.all(background.map((work) => work.stop()));
    },
  };
}

/**
 * The tool, its calls given later(): a message to the call's chat and thread, stored for its
 * time. The call's context is captured as it starts, so a later() made from a callback that
 * runs in another context still schedules into this call's chat.
 */
function withLater(tool: Tool, later: Later): Tool {
  return {
    ...tool,
    run: (input, call) => {
      const own = context.active();
      return tool.run(input, { ...call, later: (text, delayMs) => context.with(own, () => later(text, delayMs, call.idempotencyKey)) });
    },
  };
}
