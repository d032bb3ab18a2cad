import type OpenAI from 'openai';
import type { Logger } from 'pino';
import type { Attachment } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import type { HistoryEntry, HistoryLog } from '../../store/store.js';
import type { Tool } from '../../tools/tool.js';
import type { LlmConfig } from '../../tools/tools-config.js';
import type { Agent, Turn } from '../agent.js';
import { modelServer, requestChat, type ModelServer } from './chat-request.js';
import { assistantEntry, historyMessages, toolEntry, userEntry } from './conversation.js';
import { confirmHeldCall } from './confirm-command.js';
import { holdUnlessAllowed } from './hold-call.js';
import { CONFIRM_COMMAND, isConfirmCommand, withoutConfirmCodes } from './tool-confirmation.js';
import { TurnAuthority } from './turn-authority.js';
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
    if (isConfirmCommand(turn.text)) return confirmHeldCall(turn, this.options);
    const earlier = await history.recent(turn.session.sessionId, destination, config.historyMessages);
    const added: HistoryEntry[] = [userEntry(turn.text, Date.now(), turn.author)];
    // Everyone whose text the model reads this turn: it acts with the rights they all hold.
    const authority = new TurnAuthority(turn, earlier);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: this.systemText() },
      ...historyMessages(earlier),
      { role: 'user', content: added[0]!.text },
    ];
    // Only what this sender may use on this platform is offered, and only that may run.
    const offered = offeredTools(this.options.tools, { platform: turn.session.platform, admin: turn.senderIsAdmin });
    let answer: Answer | undefined;
    try {
      answer = await this.converse(turn, offered, messages, added, authority);
    } finally {
      // Kept even when a request failed, so the next turn knows which tools already ran.
      await history.append(turn.session.sessionId, destination, added, config.historyMessages).catch((error: unknown) => {
        this.options.logger.error({ err: error, message: turn.messageId }, 'could not record the conversation; the next turn will not see this one');
      });
    }
    // Stopped (/stop or shutdown): nothing more is said.
    if (answer === undefined) return;
    await turn.reply(withoutConfirmCodes(answer.text), answer.attachment === undefined ? undefined : { attachment: answer.attachment });
  }

  /** The model loop; `added` receives each entry for history. Undefined when the turn was stopped. */
  private async converse(
    turn: Turn,
    offered: readonly Tool[],
    messages: ChatCompletionMessageParam[],
    added: HistoryEntry[],
    authority: TurnAuthority,
  ): Promise<Answer | undefined> {
    const { config, logger } = this.options;
    const toolsByName = new Map(offered.map((tool) => [tool.name, tool]));
    const definitions = offered.map((tool) => this.definitions.get(tool)!);
    let attachment: Attachment | undefined;
    for (let round = 0; ; round++) {
      if (turn.signal.aborted) return undefined;
      authority.nextRequest();
      const completion = await requestChat(
        this.client,
        this.server,
        { model: config.model, messages, ...(definitions.length === 0 ? {} : { tools: definitions }) },
        turn.signal,
        { apiKey: config.apiKey, timeoutMs: config.timeoutMs },
        // The answer as it is written, for platforms that show it (a draft, a live message).
        (snapshot) => turn.progress?.(withoutConfirmCodes(snapshot)),
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
        added.push(assistantEntry(text, [], Date.now(), authority.authors));
        return { text: text.trim() === '' ? '(The model gave no answer.)' : text, attachment };
      }
      if (round >= config.maxToolRounds) {
        const notice = `I stopped after ${config.maxToolRounds} rounds of tool calls without a final answer (THREADLINE_LLM_MAX_TOOL_ROUNDS). Ask again, or more narrowly.`;
        // The calls not run are not kept: history holds only calls with their results.
        added.push(assistantEntry(notice, [], Date.now(), authority.authors));
        return { text: notice, attachment };
      }
      const announced = assistantEntry(text, calls, Date.now(), authority.authors);
      added.push(announced);
      messages.push({
        role: 'assistant',
        content: announced.text === '' ? null : announced.text,
        tool_calls: calls.map(({ id, function: { name, arguments: args } }) => ({ id, type: 'function', function: { name, arguments: args } })),
      });
      // What the model said with its calls ("Let me look…") is said before they run.
      if (text.trim() !== '') await turn.reply(withoutConfirmCodes(text));
      for (const call of calls) {
        const tool = toolsByName.get(call.function.name);
        const held = await holdUnlessAllowed(turn, tool, call, authority, logger);
        if (held !== undefined) {
          added.push(held);
          messages.push({ role: 'tool', tool_call_id: call.id, content: held.text });
          continue;
        }
        const outcome = await runToolCall(toolsByName, call, {
          signal: turn.signal,
          authorize: (name) => turn.authorize(name),
          // An admin's rights only while the model has read nobody else's text.
          byAdmin: turn.senderIsAdmin && authority.unprivileged().length === 0,
          logger,
        });
        if (outcome.attachment !== undefined) attachment = outcome.attachment;
        if (tool !== undefined) authority.answered(tool);
        const result = toolEntry(call.id, outcome.content, Date.now(), authority.authors);
        added.push(result);
        messages.push({ role: 'tool', tool_call_id: call.id, content: result.text });
      }
    }
  }

  private systemText(): string {
    const extra = this.options.systemPrompt().trim();
    return extra === '' ? BASE_PROMPT : `${BASE_PROMPT}\n\n${extra}`;
  }
}
