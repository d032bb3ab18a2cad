import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ThreadlineError } from '../../errors.js';
import type { Attachment } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import type { HistoryEntry, HistoryLog } from '../../store/store.js';
import { executeTool } from '../../tools/execute-tool.js';
import { offeredTools } from '../../tools/offered-tools.js';
import type { Tool } from '../../tools/tool.js';
import type { LlmConfig } from '../../tools/tools-config.js';
import type { Turn } from '../agent.js';
import { toolAuthor, unionOfAuthors } from '../author.js';
import { boundedText, userEntry } from './conversation.js';
import { CONFIRMATION_TTL_MS, CONFIRM_COMMAND, confirmationCodeOf, confirmedExtra, heldCallState } from './tool-confirmation.js';

export interface ConfirmDeps {
  readonly config: LlmConfig;
  readonly tools: readonly Tool[];
  readonly history: HistoryLog;
  readonly logger: Logger;
}

/**
 * `/confirm <code>` from an admin: runs the call held under the code in this conversation, once
 * (its effects keyed by the session and code, so a second /confirm or a replay does not repeat
 * them), in this chat, and says what it answered.
 */
export async function confirmHeldCall(turn: Turn, deps: ConfirmDeps): Promise<void> {
  const { config, history, logger } = deps;
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
      unknown: `No call waits for confirmation under ${code} in this conversation (reply in the chat and thread that asked).`,
    };
    return turn.reply(why[found.state]);
  }
  const { call } = found;
  const tool = offeredTools(deps.tools, { platform: turn.session.platform, admin: turn.senderIsAdmin }).find(({ name }) => name === call.tool);
  let text: string;
  let attachment: Attachment | undefined;
  if (tool === undefined) {
    text = `${call.tool} is not available in this chat now, so ${code} was not run.`;
  } else {
    trace.getActiveSpan()?.addEvent('tool.confirmed', { 'gen_ai.tool.name': call.tool, 'threadline.tool.confirmation': code });
    logger.info({ tool: call.tool, confirmation: code, message: turn.messageId }, 'an admin confirmed a held tool call');
    try {
      const result = await executeTool(tool, JSON.parse(call.arguments), {
        signal: turn.signal,
        callId: `confirm-${code}`,
        idempotencyKey: `confirm/${turn.session.sessionId}/${code}`,
        authorize: (name) => turn.authorize(name),
      });
      text = `Ran ${call.tool} (${code}), confirmed by ${turn.author}:\n${result.text}`;
      attachment = result.attachment;
    } catch (error) {
      // A ThreadlineError's message is written for the chat; anything else is logged, not shown.
      if (!(error instanceof ThreadlineError)) logger.error({ err: error, tool: call.tool, confirmation: code }, 'a confirmed tool call failed');
      text = `${call.tool} (${code}) failed: ${error instanceof ThreadlineError ? error.message : 'an unexpected error (logged)'}`;
    }
  }
  // What the call answered is read by the model from now on: with the rights of whose text led to it.
  const authors = unionOfAuthors(found.authors, [turn.author], tool?.trustedOutput === false ? [toolAuthor(tool.name)] : []);
  const now = Date.now();
  const record: HistoryEntry[] = [
    userEntry(turn.text, now, turn.author),
    { role: 'assistant', text: boundedText(text), extra: JSON.stringify(confirmedExtra(code, authors)), at: now },
  ];
  await history.append(turn.session.sessionId, destination, record, config.historyMessages).catch((error: unknown) => {
    // The code stays valid until it expires, and a second /confirm finds the effects keyed: they stay once.
    logger.error({ err: error, message: turn.messageId }, 'could not record the confirmation');
  });
  await turn.reply(text, attachment === undefined ? undefined : { attachment });
}
