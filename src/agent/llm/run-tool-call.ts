import type { Logger } from 'pino';
import type { Attachment } from '../../session/delivery.js';
import { ThreadlineError, messageOf } from '../../errors.js';
import { executeTool, type Authorize } from '../../tools/execute-tool.js';
import type { Tool } from '../../tools/tool.js';
import type { ChatCompletionMessageFunctionToolCall } from './model-types.js';

/** What the model is told a call answered, and the file it produced, if any. */
export interface ToolCallOutcome {
  readonly content: string;
  readonly attachment?: Attachment | undefined;
}

/**
 * Runs one function call of the model through executeTool (its `execute_tool` span, argument
 * check, admin check) in the active context, which is the turn's session. Never throws: an
 * unknown tool, arguments that are not JSON and a failed call become `error: ...` for the
 * model, so it can correct itself or explain; a tool that fails with something other than a
 * ThreadlineError is logged, and the model is told only that it failed.
 */
export async function runToolCall(
  tools: ReadonlyMap<string, Tool>,
  call: ChatCompletionMessageFunctionToolCall,
  options: { readonly signal: AbortSignal; readonly authorize: Authorize; readonly byAdmin: boolean; readonly logger: Logger },
): Promise<ToolCallOutcome> {
  const { name } = call.function;
  const tool = tools.get(name);
  if (tool === undefined) {
    options.logger.warn({ tool: name.slice(0, 80) }, 'the model called a tool this turn does not offer');
    const known = [...tools.keys()].join(', ') || 'none';
    return { content: `error: no tool named "${name.slice(0, 80)}" may be called in this chat; the tools you may call are: ${known}` };
  }
  let args: unknown;
  try {
    // Some models send an empty string for a call without arguments; some endpoints null or an object.
    const raw: unknown = call.function.arguments;
    args = raw === null || raw === undefined || (typeof raw === 'string' && raw.trim() === '') ? {} : typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch (error) {
    return { content: `error: the arguments of ${name} are not valid JSON (${messageOf(error)}); send a JSON object` };
  }
  try {
    const result = await executeTool(tool, args, { signal: options.signal, callId: call.id, byAdmin: options.byAdmin, authorize: options.authorize });
    return { content: result.text, attachment: result.attachment };
  } catch (error) {
    if (error instanceof ThreadlineError) return { content: `error: ${error.message}` };
    options.logger.error({ err: error, tool: name }, 'a tool failed unexpectedly');
    return { content: `error: ${name} failed unexpectedly; the gateway's log and the trace hold the details` };
  }
}
