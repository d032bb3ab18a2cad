import { ThreadlineError } from '../../errors.js';

/** A command turned into a tool call. */
export interface ToolRequest {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** The text after the command word (and a Telegram @botname suffix), trimmed. */
export function argumentsOf(text: string): string {
  return text.replace(/^\s*\/[a-z_]+(?:@\S+)?/i, '').trim();
}

function usage(text: string): ThreadlineError {
  return new ThreadlineError('TL_TOOL_INPUT', `usage: ${text}`);
}

/** `/run [--every <seconds>] <cmd>`: in the background, reported when it ends. */
export function parseRun(rest: string): ToolRequest {
  const every = /^--every\s+(\S+)\s+([\s\S]+)$/.exec(rest);
  if (every !== null) {
    const seconds = Number(every[1]);
    if (!Number.isInteger(seconds)) throw usage('/run --every <seconds> <cmd> (whole seconds)');
    return { tool: 'terminal', args: { command: every[2]!.trim(), background: true, notify_on_complete: true, check_interval: seconds } };
  }
  if (rest === '' || rest.startsWith('--every')) throw usage('/run [--every <seconds>] <cmd>');
  return { tool: 'terminal', args: { command: rest, background: true, notify_on_complete: true } };
}

/** `/remind <n>s|m|h|d <text>`. */
export function parseRemind(rest: string): ToolRequest {
  // `10 m stand up` is ten minutes, not ten seconds of "m stand up".
  const match = /^(\d+\s*[smhd]|\S+)\s+([\s\S]+)$/i.exec(rest.replace(/^(\d+)\s+([smhd])(?=\s)/i, '$1$2'));
  if (match === null) throw usage('/remind <n>s|m|h|d <text>, e.g. /remind 10m stand up');
  return { tool: 'remind', args: { delay: match[1]!, text: match[2]!.trim() } };
}

/** Straight and typographic quotes: some clients turn "…" into “…” as it is typed. */
const QUOTED = /^(["“'‘])([\s\S]*?)(["”'’])(?:\s+|$)([\s\S]*)$/;

/** `/cron list`, `/cron rm <id>`, `/cron "<expression>" [--to <target>] <text>`. */
export function parseCron(rest: string): ToolRequest {
  if (rest === 'list') return { tool: 'list_schedules', args: {} };
  const remove = /^(?:rm|remove)\s+(\S+)$/.exec(rest);
  if (remove !== null) return { tool: 'remove_schedule', args: { id: remove[1]! } };
  const quoted = QUOTED.exec(rest);
  if (quoted === null) throw usage('/cron "<expression>" [--to <target>] <text>, /cron list, /cron rm <id>');
  let text = quoted[4]!.trim();
  let target: string | undefined;
  const to = /^--to\s+(\S+)\s+([\s\S]+)$/.exec(text);
  if (to !== null) {
    target = to[1]!;
    text = to[2]!.trim();
  } else if (/^--to(?:\s|$)/.test(text)) {
    // `--to <target>` with no text after it: never scheduled as the text "--to <target>".
    throw usage('/cron "<expression>" --to <target> <text>');
  }
  if (text === '') throw usage('/cron "<expression>" [--to <target>] <text>');
  return { tool: 'schedule', args: { cron: quoted[2]!.trim(), text, ...(target === undefined ? {} : { target }) } };
}

/** `/send <target> <text>`. */
export function parseSend(rest: string): ToolRequest {
  const match = /^(\S+)\s+([\s\S]+)$/.exec(rest);
  if (match === null) throw usage('/send <target> <text>, target origin, home, home:<platform> or <platform>:<chat>[:<thread>]');
  return { tool: 'send_message', args: { target: match[1]!, text: match[2]!.trim() } };
}
