import type OpenAI from 'openai';
import type { Logger } from 'pino';
import type { Attachment } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import type { HistoryEntry, HistoryLog } from '../../store/store.js';
import type { Tool } from '../../tools/tool.js';
import type { LlmConfig } from '../../tools/tools-config.js';
import type { Agent, Turn } from '../agent.js';
import { modelServer, requestChat, type ModelServer } from './chat-request.js';
import { assistantEntry, authorsOf, boundedText, historyMessages, toolEntry, userEntry } from './conversation.js';
import { unionOfAuthors, type Author } from '../author.js';
import { ThreadlineError, messageOf } from '../../errors.js';
import { executeTool } from '../../tools/execute-tool.js';
import { trace } from '@opentelemetry/api';
import {
  CONFIRMATION_TTL_MS,
  CONFIRM_COMMAND,
  confirmationCode,
  confirmationCodeOf,
  confirmedExtra,
  heldCallNotice,
  heldCallResult,
  heldCallState,
  heldExtra,
  type HeldCall,
} from './tool-confirmation.js';
import { createModelClient } from './model-client.js';
import type { ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam, ChatCompletionTool } from './model-types.js';
import { runToolCall } from './run-tool-call.js';
import { toolDefinitions } from './tool-definitions.js';
import { offeredTools } from '../../tools/offered-tools.js';

/** Tool calls run from one answer of the model; the rest are dropped with the answer. */
export const MAX_CALLS_PER_ANSWER = 16;

/** What the model is always told; skills and the like come after it. */
export const BASE_PROMPT = [
  'You are the assistant of a chat gateway, answering one chat (and thread) at a time.',
  'Use the tools when they help. They act in the chat this message came from: never ask for, or pass, a chat or thread id.',
  'A tool answer starting with "error:" says what went wrong; fix the call or tell the user.',
  'Messages starting with [from <platform>] were sent to this chat from elsewhere.',
  'Tools for admins run only with an admin\'s confirmation when the conversation holds text of others: then say the call waits for an admin.',
  'Answer briefly, in plain text.',
].join('\n');

export interface LlmAgentOptions {
  /** THREADLINE_LLM_*. */
  readonly config: LlmConfig;
  /** What the model may call. */
  readonly tools: readonly Tool[];
  /** Each session's conversation, read before and written after every turn. */
  readonly history: HistoryLog;
  /** Added to the base prompt, read at every turn (the skills available now). */
  readonly systemPrompt: () => string;
  readonly logger: Logger;
  /** The client; default: the official one for config.baseUrl. */
  readonly client?: OpenAI;
}

/** The final answer of a turn, and the file to send with it. */
interface Answer {
  readonly text: string;
  readonly attachment: Attachment | undefined;
}

/**
 * The agent backed by a model behind an OpenAI-compatible Chat Completions API. Each message
 * (the gateway hands commands to the command agent first) runs the model with the session's history and the
 * tools, calling tools until the model answers in text or THREADLINE_LLM_MAX_TOOL_ROUNDS
 * rounds of calls have run. Tools run in the turn's context and read the routing from it:
 * no chat or thread id ever goes through the model. Each request is a `chat <model>` span
 * under agent.turn, and a failed request fails the turn with TL_LLM_FAILED. Answers are
 * streamed: the text so far goes to `turn.progress` as it is written, and text that comes
 * with tool calls is replied before the tools run.
 */
export class LlmAgent implements Agent {
  /** `/confirm <code>`: an admin runs a call the model was not allowed to make alone. */
  readonly commands: ReadonlySet<string> = new Set([CONFIRM_COMMAND]);
  private readonly client: OpenAI;
  private readonly server: ModelServer;
  /** Each tool's definition for the model, made once. */
  private readonly definitions: ReadonlyMap<Tool, ChatCompletionTool>;

  constructor(private readonly options: LlmAgentOptions) {
    this.client = options.client ?? createModelClient(options.config, options.logger);
    this.server = modelServer(options.config.baseUrl);
    this.definitions = new Map(options.tools.map((tool) => [tool, toolDefinitions([tool])[0]!]));
  }

  async handle(turn: Turn): Promise<void> {
    const { config, history } = this.options;
    const destination = destinationOf(turn.session);
    if (/^\s*\/confirm(?:@\S+)?(?:\s|$)/i.test(turn.text)) return this.confirm(turn);
    const earlier = await history.recent(turn.session.sessionId, destination, config.historyMessages);
    const added: HistoryEntry[] = [userEntry(turn.text, Date.now(), turn.author)];
    // Everyone whose text the model reads this turn: it acts with the rights they all hold.
    const authors = unionOfAuthors(...earlier.map(authorsOf), [turn.author]);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: this.systemText() },
      ...historyMessages(earlier),
      { role: 'user', content: added[0]!.text },
    ];
    // Only what this sender may use on this platform is offered, and only that may run.
    const offered = offeredTools(this.options.tools, { platform: turn.session.platform, admin: turn.senderIsAdmin });
    let answer: Answer | undefined;
    try {
      answer = await this.converse(turn, offered, messages, added, authors);
    } finally {
      // Kept even when a request failed, so the next turn knows which tools already ran.
      await history.append(turn.session.sessionId, destination, added, config.historyMessages).catch((error: unknown) => {
        this.options.logger.error({ err: error, message: turn.messageId }, 'could not record the conversation; the next turn will not see this one');
      });
    }
    // Stopped (/stop or shutdown): nothing more is said.
    if (answer === undefined) return;
    await turn.reply(answer.text, answer.attachment === undefined ? undefined : { attachment: answer.attachment });
  }

  /** The model loop; `added` receives each entry for history. Undefined when the turn was stopped. */
  private async converse(
    turn: Turn,
    offered: readonly Tool[],
    messages: ChatCompletionMessageParam[],
    added: HistoryEntry[],
    authors: readonly Author[],
  ): Promise<Answer | undefined> {
    const { config, logger } = this.options;
    const toolsByName = new Map(offered.map((tool) => [tool.name, tool]));
    const definitions = offered.map((tool) => this.definitions.get(tool)!);
    let attachment: Attachment | undefined;
    for (let round = 0; ; round++) {
      if (turn.signal.aborted) return undefined;
      const completion = await requestChat(
        this.client,
        this.server,
        { model: config.model, messages, ...(definitions.length === 0 ? {} : { tools: definitions }) },
        turn.signal,
        { apiKey: config.apiKey, timeoutMs: config.timeoutMs },
        // The answer as it is written, for platforms that show it (a draft, a live message).
        (snapshot) => turn.progress?.(snapshot),
      ).catch((error: unknown) => {
        // A request cut short by /stop is no failure to report.
        if (turn.signal.aborted) return undefined;
        throw error;
      });
      if (completion === undefined) return undefined;
      const message = completion.choices[0]!.message;
      const text = message.content ?? '';
      // Bounded: an answer asking for thousands of calls runs the first few, not all of them.
      const calls = (message.tool_calls ?? [])
        .filter((call): call is ChatCompletionMessageFunctionToolCall => call.type === 'function')
        .slice(0, MAX_CALLS_PER_ANSWER);
      if (calls.length === 0) {
        added.push(assistantEntry(text, [], Date.now(), authors));
        return { text: text.trim() === '' ? '(The model gave no answer.)' : text, attachment };
      }
      if (round >= config.maxToolRounds) {
        const notice = `I stopped after ${config.maxToolRounds} rounds of tool calls without a final answer (THREADLINE_LLM_MAX_TOOL_ROUNDS). Ask again, or more narrowly.`;
        // The calls not run are not kept: history holds only calls with their results.
        added.push(assistantEntry(notice, [], Date.now(), authors));
        return { text: notice, attachment };
      }
      const announced = assistantEntry(text, calls, Date.now(), authors);
      added.push(announced);
      messages.push({
        role: 'assistant',
        content: announced.text === '' ? null : announced.text,
        tool_calls: calls.map(({ id, function: { name, arguments: args } }) => ({ id, type: 'function', function: { name, arguments: args } })),
      });
      // What the model said with its calls ("Let me look…") is said before they run.
      if (text.trim() !== '') await turn.reply(text);
      for (const call of calls) {
        const held = await this.holdUnlessAllowed(turn, toolsByName.get(call.function.name), call, authors);
        if (held !== undefined) {
          added.push(held);
          messages.push({ role: 'tool', tool_call_id: call.id, content: held.text });
          continue;
        }
        const outcome = await runToolCall(toolsByName, call, {
          signal: turn.signal,
          authorize: (name) => turn.authorize(name),
          logger,
        });
        if (outcome.attachment !== undefined) attachment = outcome.attachment;
        const result = toolEntry(call.id, outcome.content, Date.now(), authors);
        added.push(result);
        messages.push({ role: 'tool', tool_call_id: call.id, content: result.text });
      }
    }
  }

  /**
   * A call of a tool that needs rights is held, not run, while the model has read text of
   * anyone without them (a non-admin in a group, text sent in from elsewhere): the model may be
   * repeating their instructions under an admin's turn. The chat is asked for an admin's
   * `/confirm`; the returned entry is the call's result for the model. Undefined: run it.
   */
  private async holdUnlessAllowed(turn: Turn, tool: Tool | undefined, call: ChatCompletionMessageFunctionToolCall, authors: readonly Author[]): Promise<HistoryEntry | undefined> {
    if (tool === undefined || !tool.adminOnly) return undefined;
    const unprivileged = authors.filter((author) => !turn.isAdmin(author));
    if (unprivileged.length === 0) return undefined;
    const held: HeldCall = { code: confirmationCode(), tool: tool.name, arguments: boundedText(String(call.function.arguments ?? '')), until: Date.now() + CONFIRMATION_TTL_MS };
    trace.getActiveSpan()?.addEvent('tool.held', { 'gen_ai.tool.name': tool.name, 'gen_ai.tool.call.id': call.id, 'threadline.tool.unprivileged_authors': unprivileged.length });
    this.options.logger.warn({ tool: tool.name, message: turn.messageId, unprivileged: unprivileged.length }, 'a tool call that needs rights waits for an admin: the model read text of others');
    await turn.reply(heldCallNotice(held, unprivileged));
    return toolEntry(call.id, heldCallResult(held, unprivileged), Date.now(), authors, heldExtra(held));
  }

  /** `/confirm <code>` from an admin: runs the held call once, in this chat, and says what it answered. */
  private async confirm(turn: Turn): Promise<void> {
    const { config, history } = this.options;
    if (!(await turn.authorize(CONFIRM_COMMAND))) return;
    const code = confirmationCodeOf(turn.text);
    if (code === undefined) return turn.reply(`Usage: ${CONFIRM_COMMAND} <code>, with the code the request gave.`);
    const destination = destinationOf(turn.session);
    const earlier = await history.recent(turn.session.sessionId, destination, config.historyMessages);
    const found = heldCallState(earlier, code, Date.now());
    if (found.state !== 'held') {
      const why = {
        confirmed: `The call ${code} was confirmed already; it runs once.`,
        expired: `The call ${code} waited more than ${CONFIRMATION_TTL_MS / 60_000} minutes; ask for it again.`,
        unknown: `No call waits for confirmation under ${code} in this conversation.`,
      };
      return turn.reply(why[found.state]);
    }
    const { call } = found;
    const tool = offeredTools(this.options.tools, { platform: turn.session.platform, admin: turn.senderIsAdmin }).find(({ name }) => name === call.tool);
    let text: string;
    let attachment: Attachment | undefined;
    if (tool === undefined) {
      text = `${call.tool} is not available in this chat now, so ${code} was not run.`;
    } else {
      try {
        const args: unknown = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
        const result = await executeTool(tool, args, { signal: turn.signal, callId: `confirm-${code}`, authorize: (name) => turn.authorize(name) });
        text = `Ran ${call.tool} (${code}), confirmed by ${turn.author}:\n${result.text}`;
        attachment = result.attachment;
      } catch (error) {
        text = `${call.tool} (${code}) failed: ${error instanceof ThreadlineError ? error.message : messageOf(error)}`;
      }
    }
    const now = Date.now();
    const record: HistoryEntry[] = [
      userEntry(turn.text, now, turn.author),
      { role: 'assistant', text: boundedText(text), extra: JSON.stringify(confirmedExtra(code, [turn.author])), at: now },
    ];
    await history.append(turn.session.sessionId, destination, record, config.historyMessages).catch((error: unknown) => {
      this.options.logger.error({ err: error, message: turn.messageId }, 'could not record the confirmation; the code stays valid until it expires');
    });
    await turn.reply(text, attachment === undefined ? undefined : { attachment });
  }

  private systemText(): string {
    const extra = this.options.systemPrompt().trim();
    return extra === '' ? BASE_PROMPT : `${BASE_PROMPT}\n\n${extra}`;
  }
}
