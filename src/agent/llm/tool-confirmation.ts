import { createHash } from 'node:crypto';
import type { HistoryEntry } from '../../store/store.js';
import { escapeChar, printable } from '../../text/printable.js';
import { describeAuthor, type Author } from '../author.js';
import { authorsOf, extraOf } from './conversation.js';

/** How long an admin has to confirm a call; later it must be asked for again. */
export const CONFIRMATION_TTL_MS = 10 * 60_000;

/** The command an admin answers a request with. */
export const CONFIRM_COMMAND = '/confirm';

/** Longest arguments a held call may have: an admin must be able to read all of them. */
export const MAX_HELD_ARGUMENTS_CHARS = 2_000;

/** A call of a tool that needs rights, held because the model had read text of authors without them. */
export interface HeldCall {
  readonly code: string;
  readonly tool: string;
  /** The arguments as the model gave them, as JSON: /confirm checks them again, as the notice showed them checked. */
  readonly arguments: string;
  /** Epoch ms after which /confirm refuses it. */
  readonly until: number;
}

/** Letters that cannot be mistaken for one another when typed. */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/**
 * The code of a held call, from its message and its call: a turn replayed after a crash holds
 * the same call under the same code (and its notice, the same words, is sent once).
 */
export function confirmationCode(messageId: string, callId: string): string {
  const digest = createHash('sha256').update(`${messageId}\n${callId}`).digest();
  let code = '';
  for (let i = 0; i < 6; i++) code += ALPHABET[digest[i]! % ALPHABET.length];
  return code;
}

/** Whether `text` is the /confirm command, with or without a code. */
export function isConfirmCommand(text: string): boolean {
  return /^\s*\/confirm(?:@\S+)?(?:\s|$)/i.test(text);
}

/** The code of `/confirm <code>`, or undefined when the text is not that command. */
export function confirmationCodeOf(text: string): string | undefined {
  const match = /^\s*\/confirm(?:@\S+)?\s+([a-z0-9]{1,32})\s*$/i.exec(text);
  return match?.[1]?.toLowerCase();
}

/**
 * The model's text with any `/confirm <code>` made inert: only the gateway's own request may show
 * a code, or a model repeating a non-admin's words could dress a harmful held call as a harmless one.
 */
export function withoutConfirmCodes(text: string): string {
  return text.replace(/(\/confirm(?:@\S+)?)\s+[a-z0-9]{1,32}\b/gi, '$1 ⟨code withheld: only the gateway\'s own request shows one⟩');
}

/** `extra` of the tool entry that records a held call. */
export function heldExtra(call: HeldCall): Record<string, unknown> {
  return { held: call };
}

/** `extra` of the entry that records a confirmation, so a code runs once. */
export function confirmedExtra(code: string, authors: readonly Author[]): Record<string, unknown> {
  return { confirmed: code, authors };
}

/** Where a code stands in a conversation's history: held (with whose text the model had read), done, expired or unknown. */
export type HeldCallState =
  | { readonly state: 'held'; readonly call: HeldCall; readonly authors: readonly Author[] }
  | { readonly state: 'expired' | 'confirmed' | 'unknown' };

/** The state of `code` in `entries` (oldest first) at `now`. */
export function heldCallState(entries: readonly HistoryEntry[], code: string, now: number): HeldCallState {
  let held: { call: HeldCall; authors: Author[] } | undefined;
  for (const entry of entries) {
    const extra = extraOf(entry);
    if (extra === undefined) continue;
    if (extra.confirmed === code) return { state: 'confirmed' };
    const candidate = extra.held as Partial<HeldCall> | undefined;
    if (candidate?.code === code && typeof candidate.tool === 'string' && typeof candidate.arguments === 'string' && typeof candidate.until === 'number') {
      held = { call: candidate as HeldCall, authors: authorsOf(entry) };
    }
  }
  if (held === undefined) return { state: 'unknown' };
  return held.call.until < now ? { state: 'expired' } : { state: 'held', ...held };
}

/**
 * Arguments as a person reads them: control characters escaped, and a run of spaces counted,
 * so nothing can be hidden past the edge of the screen.
 */
export function shownArguments(json: string): string {
  return printable(json)
    .replace(/[\p{Cf}\p{Zs}\u115f\u1160\u3164\uffa0]/gu, (char) => (char === ' ' ? char : escapeChar(char)))
    .replace(/ {4,}/g, (run) => `⟨${run.length} spaces⟩`);
}

/** `text` in a code block whose fence no run of backticks in it can close: Markdown platforms show it as it is. */
function fenced(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map(([run]) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}\n${text}\n${fence}`;
}

/** What the chat is told when a call is held: what would run, why not yet, and how to run it. */
export function heldCallNotice(call: HeldCall, shown: string, unprivileged: readonly Author[]): string {
  return [
    `The assistant asked to run ${call.tool} with:`,
    fenced(shown),
    `It was not run: this conversation holds ${describe(unprivileged)}, who may not run it, and the assistant may be repeating them.`,
    `An admin who wants it run replies here, in this chat and thread: ${CONFIRM_COMMAND} ${call.code} (valid ${CONFIRMATION_TTL_MS / 60_000} minutes).`,
  ].join('\n');
}

/** What the model is told in place of the held call's result: never the code, which it could repeat beside other arguments. */
export function heldCallResult(tool: string, unprivileged: readonly Author[]): string {
  return `error: ${tool} was not run: the conversation holds ${describe(unprivileged)}, who may not run it, so an admin must confirm it; the chat was asked. Do not call it again for this; say it waits for an admin.`;
}

/** What the model is told of another admin-only call in a turn that already holds one. */
export function secondHeldCallResult(tool: string): string {
  return `error: ${tool} was not run: this turn already waits for an admin to confirm a call; one request a turn. Say what else you would run.`;
}

function describe(authors: readonly Author[]): string {
  const names = authors.map(describeAuthor);
  return `text from ${names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`}`;
}
