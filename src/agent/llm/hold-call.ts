import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../../errors.js';
import type { HistoryEntry } from '../../store/store.js';
import type { Tool } from '../../tools/tool.js';
import type { Turn } from '../agent.js';
import { toolEntry } from './conversation.js';
import type { ChatCompletionMessageFunctionToolCall } from './model-types.js';
import {
  CONFIRMATION_TTL_MS,
  CONFIRM_COMMAND,
  MAX_HELD_ARGUMENTS_CHARS,
  confirmationCode,
  heldCallNotice,
  heldCallResult,
  heldExtra,
  secondHeldCallResult,
  shownArguments,
  type HeldCall,
} from './tool-confirmation.js';
import type { TurnAuthority } from './turn-authority.js';

/**
 * A call of a tool that needs rights is held, not run, while the model has read text of anyone
 * without them (a non-admin in a group, text sent in from elsewhere, a tool's answer): the model
 * may be repeating their instructions under an admin's turn. Its arguments are checked first, so
 * the chat is shown exactly what an admin's `/confirm` would run; one request a turn. Returns the
 * call's result entry for the model, or undefined: run it.
 */
export async function holdUnlessAllowed(
  turn: Turn,
  tool: Tool | undefined,
  call: ChatCompletionMessageFunctionToolCall,
  authority: TurnAuthority,
  logger: Logger,
): Promise<HistoryEntry | undefined> {
  if (tool === undefined || !tool.adminOnly) return undefined;
  const unprivileged = authority.unprivileged();
  if (unprivileged.length === 0) return undefined;
  const refuse = (text: string) => toolEntry(call.id, text, Date.now(), authority.authors);
  if (authority.holding) return refuse(secondHeldCallResult(tool.name));
  let raw: string;
  let shown: string;
  try {
    const given: unknown = call.function.arguments;
    const args: unknown = typeof given === 'string' ? (given.trim() === '' ? {} : parseJson(given, tool.name)) : (given ?? {});
    raw = JSON.stringify(args);
    // What runs on /confirm is check(raw) again: shown as the check gives it.
    shown = shownArguments(JSON.stringify(await tool.input.check(args, tool.name)));
  } catch (error) {
    if (!(error instanceof ThreadlineError)) logger.error({ err: error, tool: tool.name }, 'checking held arguments failed');
    return refuse(`error: ${error instanceof ThreadlineError ? error.message : `the arguments of ${tool.name} could not be checked (${messageOf(error)})`}`);
  }
  // Bounded as shown (escapes included): the whole request must fit in one message of any platform.
  if (shown.length > MAX_HELD_ARGUMENTS_CHARS || raw.length > 2 * MAX_HELD_ARGUMENTS_CHARS) {
    return refuse(`error: ${tool.name} needs an admin's confirmation here, and its arguments are too long to show (over ${MAX_HELD_ARGUMENTS_CHARS} characters); ask with shorter ones`);
  }
  const held: HeldCall = { code: confirmationCode(turn.messageId, call.id), tool: tool.name, arguments: raw, until: Date.now() + CONFIRMATION_TTL_MS };
  authority.holding = true;
  trace.getActiveSpan()?.addEvent('tool.held', { 'gen_ai.tool.name': tool.name, 'gen_ai.tool.call.id': call.id, 'threadline.tool.confirmation': held.code });
  logger.warn({ tool: tool.name, confirmation: held.code, message: turn.messageId }, 'a tool call that needs rights waits for an admin: the model read text of others');
  await turn.reply(heldCallNotice(held, shown, unprivileged), { button: { label: `Run it (admins): ${held.code}`, command: `${CONFIRM_COMMAND} ${held.code}` } });
  return toolEntry(call.id, heldCallResult(tool.name, unprivileged), Date.now(), authority.authors, heldExtra(held));
}

function parseJson(text: string, tool: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ThreadlineError('TL_TOOL_INPUT', `the arguments of ${tool} are not valid JSON (${messageOf(error)})`);
  }
}
