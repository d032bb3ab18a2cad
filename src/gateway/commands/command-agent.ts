import type { Destination } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import { ThreadlineError } from '../../errors.js';
import { executeTool } from '../../tools/execute-tool.js';
import type { Tool, ToolResult } from '../../tools/tool.js';
import type { Agent, Turn } from '../../agent/agent.js';
import { ADMIN_COMMANDS, commandOf } from './command.js';
import { argumentsOf, parseCron, parseRemind, parseRun, parseSend, type ToolRequest } from './command-arguments.js';

/** What /help shows: every command, and who may use it. */
export const HELP_TEXT = [
  'Commands:',
  '/run <cmd> — run a shell command in the background, report when it ends (admin)',
  '/run --every <seconds> <cmd> — and report its progress that often (admin)',
  '/jobs — this chat\'s background commands (admin)',
  '/kill <id> — stop one (admin)',
  '/remind <n>s|m|h|d <text> — remind this chat later',
  '/cron "<expression>" [--to <target>] <text> — a cron job (admin)',
  '/cron list — this chat\'s reminders and cron jobs',
  '/cron rm <id> — remove one (admin)',
  '/send <target> <text> — send to another chat or thread (admin)',
  '/tts <text> — say it as a voice message',
  '/skills — the skills that apply here',
  '/sethome — make this chat the home channel (admin)',
  '/status — this chat\'s routing and trace',
  '/new — start a new conversation',
  '/stop — stop what this chat is running',
].join('\n');

/**
 * The default agent: the gateway's commands, each a call of a tool (so each is an
 * `execute_tool` span under agent.turn), and an echo of any other text. The LLM agent puts
 * itself in front and hands commands here.
 */
export class CommandAgent implements Agent {
  constructor(
    private readonly tools: ReadonlyMap<string, Tool>,
    /** What keeps running in a chat after /stop; default: not told. */
    private readonly background?: BackgroundOfChat,
  ) {}

  async handle(turn: Turn): Promise<void> {
    const command = commandOf(turn.text);
    if (command === undefined) return turn.reply(turn.text);
    if (ADMIN_COMMANDS.has(command) && !(await turn.authorize(command))) return;
    const rest = argumentsOf(turn.text);
    try {
      switch (command) {
        case '/status':
          return await turn.reply(statusText(turn));
        case '/sethome':
          await turn.setHome();
          return await turn.reply(`This chat is now the home channel for ${turn.session.platform}.`);
        case '/new':
          await turn.newConversation();
          return await turn.reply('Started a new conversation.');
        case '/stop':
          return await turn.reply(await this.stopText(turn));
        case '/help':
        case '/start':
          return await turn.reply(HELP_TEXT);
        case '/run':
          return await this.answer(turn, command, parseRun(rest));
        case '/jobs':
          return await this.answer(turn, command, { tool: 'list_processes', args: {} });
        case '/kill':
          return await this.answer(turn, command, { tool: 'kill_process', args: { id: required(rest, '/kill <id>') } });
        case '/remind':
          return await this.answer(turn, command, parseRemind(rest));
        case '/cron':
          return await this.answer(turn, command, parseCron(rest));
        case '/send':
          return await this.answer(turn, command, parseSend(rest));
        case '/tts':
          return await this.answer(turn, command, { tool: 'tts', args: { text: required(rest, '/tts <text>') } });
        case '/skills':
          return await this.answer(turn, command, { tool: 'skills', args: {} });
        default:
          return await turn.reply(`Unknown command ${command}. /help lists the commands.`);
      }
    } catch (error) {
      // Usage and tool errors are the user's to read; anything else is the gateway's to report.
      if (!(error instanceof ThreadlineError)) throw error;
      await turn.reply(`${command}: ${error.message}`);
    }
  }

  /** What /stop did (the running turn, aborted before this one ran) and what it leaves running. */
  private async stopText(turn: Turn): Promise<string> {
    const stopped = 'Stopped the turn this chat was running, if there was one.';
    if (this.background === undefined) return stopped;
    const running = await this.background(destinationOf(turn.session)).catch(() => undefined);
    // The stop itself succeeded: a store that cannot say what else runs only shortens the answer.
    if (running === undefined) return stopped;
    const { commands, schedules } = running;
    if (commands === 0 && schedules === 0) return `${stopped} Nothing else runs here.`;
    const still = [
      ...(commands === 0 ? [] : [`${plural(commands, 'background command')} (/jobs lists them, /kill <id> ends one)`]),
      ...(schedules === 0 ? [] : [`${plural(schedules, 'reminder or cron job', 'reminders or cron jobs')} (/cron list, /cron rm <id>)`]),
    ];
    return `${stopped} Still running here, which /stop does not end: ${still.join('; ')}.`;
  }

  /** Calls the tool and replies with what it says (and its file); a refused sender was answered already. */
  private async answer(turn: Turn, command: string, request: ToolRequest): Promise<void> {
    const tool = this.tools.get(request.tool);
    if (tool === undefined) throw new ThreadlineError('TL_TOOL_DISABLED', `${request.tool} is not available in this gateway`);
    let result: ToolResult;
    try {
      result = await executeTool(tool, request.args, { signal: turn.signal, byAdmin: turn.senderIsAdmin, authorize: () => turn.authorize(command) });
    } catch (error) {
      if (error instanceof ThreadlineError && error.code === 'TL_NOT_ADMIN') return;
      throw error;
    }
    await turn.reply(result.text, result.attachment === undefined ? undefined : { attachment: result.attachment });
  }
}

function required(text: string, usage: string): string {
  if (text === '') throw new ThreadlineError('TL_TOOL_INPUT', `usage: ${usage}`);
  return text;
}

function statusText(turn: Turn): string {
  const { session } = turn;
  return [
    `platform: ${session.platform}`,
    `chat: ${session.chatId} (${session.chatType})`,
    `thread: ${session.threadId ?? 'none'}`,
    `session: ${session.sessionId}`,
    `trace: ${turn.traceId}`,
  ].join('\n');
}

/** How much background work a chat and thread has: its commands and its scheduled jobs. */
export type BackgroundOfChat = (destination: Destination) => Promise<{ readonly commands: number; readonly schedules: number }>;

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
