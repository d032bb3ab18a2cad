import pino, { type Logger } from 'pino';
import { Type } from 'typebox';
import type { Agent } from '../../../src/agent/agent.js';
import { LlmAgent } from '../../../src/agent/llm/llm-agent.js';
import { ThreadlineError } from '../../../src/errors.js';
import { getSession, type Session, type SessionInput } from '../../../src/session/index.js';
import type { HistoryLog } from '../../../src/store/store.js';
import type { Tool } from '../../../src/tools/tool.js';
import { defineTool } from '../../../src/tools/define-tool.js';
import type { LlmConfig } from '../../../src/tools/tools-config.js';
import { MemoryHistory } from './memory-history.js';

export const CHAT_A: SessionInput = { platform: 'webhook', chatType: 'group', chatId: 'chat-a', threadId: 't-1', userId: 'u-a' };
export const CHAT_B: SessionInput = { platform: 'telegram', chatType: 'dm', chatId: 'chat-b', userId: 'u-b' };

export function llmConfig(baseUrl: string, overrides: Partial<LlmConfig> = {}): LlmConfig {
  return { baseUrl, model: 'test-model', apiKey: 'sk-test-key-0123456789', timeoutMs: 10_000, maxToolRounds: 4, historyMessages: 50, ...overrides };
}

/** A logger whose lines are kept, to check what it says (and never says). */
export function memoryLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }), lines };
}

/** A tool that answers where it runs: the session it reads from the active context. */
export function whereTool(seen: (Session | undefined)[] = []): Tool & { seen: (Session | undefined)[] } {
  const tool = defineTool({
    name: 'where',
    description: 'Says which chat it runs in',
    input: Type.Object({}),
    run: async () => {
      const session = getSession();
      seen.push(session);
      return { text: `chat ${session?.chatId ?? 'none'}` };
    },
  });
  return Object.assign(tool, { seen });
}

/** A tool that always fails as tools do, with a ThreadlineError. */
export const failingTool: Tool = defineTool({
  name: 'remind',
  description: 'Sets a reminder',
  input: Type.Object({ minutes: Type.Integer({ minimum: 1 }) }),
  adminOnly: false,
  run: async () => {
    throw new ThreadlineError('TL_TOOL_LIMIT', 'this chat has 5 reminders already; remove one first');
  },
});

/** A tool that returns a voice note. */
export const speakTool: Tool = defineTool({
  name: 'speak',
  description: 'Says a text as a voice note',
  input: Type.Object({ text: Type.String() }),
  adminOnly: false,
  run: async (args) => ({
    text: 'voice note made',
    attachment: { filename: 'note.ogg', contentType: 'audio/ogg', dataBase64: Buffer.from(String(args['text'])).toString('base64') },
  }),
});

/** An admin-only tool. */
export const adminTool: Tool = defineTool({
  name: 'shutdown',
  description: 'Stops the host',
  input: Type.Object({}),
  adminOnly: true,
  run: async () => ({ text: 'stopping' }),
});

/** Commands answered without the model: records the texts it got. */
export function commandAgent(handled: string[] = []): Agent & { handled: string[] } {
  return {
    handled,
    handle: async (turn) => {
      handled.push(turn.text);
      await turn.reply(`command ${turn.text}`);
    },
  };
}

export function llmAgent(
  config: LlmConfig,
  tools: readonly Tool[],
  options: { history?: HistoryLog; logger?: Logger; systemPrompt?: () => string } = {},
): LlmAgent {
  return new LlmAgent({
    config,
    tools,
    history: options.history ?? new MemoryHistory(),
    systemPrompt: options.systemPrompt ?? (() => ''),
    logger: options.logger ?? pino({ level: 'silent' }),
  });
}
