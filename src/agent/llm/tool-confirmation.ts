import { randomInt } from 'node:crypto';
import type { HistoryEntry } from '../../store/store.js';
import type { Author } from '../author.js';
import { extraOf } from './conversation.js';

/** How long an admin has to confirm a call; later it must be asked for again. */
export const CONFIRMATION_TTL_MS = 10 * 60_000;

/** The command an admin answers a request with. */
export const CONFIRM_COMMAND = '/confirm';

/** A call of a tool that needs rights, held because the model had read text of authors without them. */
export interface HeldCall {
  readonly code: string;
  readonly tool: string;
  /** The model's arguments, as it sent them (JSON text). */
  readonly arguments: string;
  /** Epoch ms after which /confirm refuses it. */
  readonly until: number;
}

/** Letters that cannot be mistaken for one another when typed. */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A new code to confirm a held call with: short enough to type, 31^6 ≈ 9e8 values. */
export function confirmationCode(): string {
  let code = '';
  for (let i = 0; i < 6; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

/** The code of `/confirm <code>`, or undefined when the text is not that command. */
export function confirmationCodeOf(text: string): string | undefined {
  const match = /^\s*\/confirm(?:@\S+)?\s+([a-z0-9]{1,32})\s*$/i.exec(text);
  return match?.[1]?.toLowerCase();
}

/** `extra` of the tool entry that records a held call. */
export function heldExtra(call: HeldCall): Record<string, unknown> {
  return { held: call };
}

/** `extra` of the entry that records a confirmation, so a code runs once. */
export function confirmedExtra(code: string, authors: readonly Author[]): Record<string, unknown> {
  return { confirmed: code, authors };
}

/** Where a code stands in a conversation's history: held (and whether still valid), done, or unknown. */
export type HeldCallState = { readonly state: 'held'; readonly call: HeldCall } | { readonly state: 'expired' | 'confirmed' | 'unknown' };

/** The state of `code` in `entries` (oldest first) at `now`. */
export function heldCallState(entries: readonly HistoryEntry[], code: string, now: number): HeldCallState {
  let held: HeldCall | undefined;
  for (const entry of entries) {
    const extra = extraOf(entry);
    if (extra === undefined) continue;
    if (extra.confirmed === code) return { state: 'confirmed' };
    const candidate = extra.held as Partial<HeldCall> | undefined;
    if (candidate?.code === code && typeof candidate.tool === 'string' && typeof candidate.arguments === 'string' && typeof candidate.until === 'number') {
      held = candidate as HeldCall;
    }
  }
  if (held === undefined) return { state: 'unknown' };
  return held.until < now ? { state: 'expired' } : { state: 'held', call: held };
}

/** What the chat is told when a call is held: what would run, why not yet, and how to run it. */
export function heldCallNotice(call: HeldCall, unprivileged: readonly Author[]): string {
  const args = call.arguments.length > 500 ? `${call.arguments.slice(0, 500)}…` : call.arguments;
  return [
    `The assistant asked to run ${call.tool} with ${args}`,
    `It was not run: this conversation holds text from ${describe(unprivileged)}, who may not run it, and the assistant may be repeating them.`,
    `An admin who wants it run sends: ${CONFIRM_COMMAND} ${call.code} (valid ${CONFIRMATION_TTL_MS / 60_000} minutes).`,
  ].join('\n');
}

/** What the model is told in place of the held call's result. */
export function heldCallResult(call: HeldCall, unprivileged: readonly Author[]): string {
  return `error: ${call.tool} was not run: the conversation holds text from ${describe(unprivileged)}, who may not run it, so an admin must confirm it; the chat was asked (${CONFIRM_COMMAND} ${call.code}). Do not call it again for this; say it waits for an admin.`;
}

function describe(authors: readonly Author[]): string {
  const names = authors.map((author) => (author.startsWith('~') ? nameOfMarker(author) : author));
  return names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`;
}

function nameOfMarker(author: Author): string {
  if (author.startsWith('~unverified:')) return `an unverified ${author.slice('~unverified:'.length)} sender`;
  if (author.startsWith('~mirrored:')) return `text sent in from ${author.slice('~mirrored:'.length)}`;
  if (author === '~many') return 'more senders';
  return 'messages of unknown authors (written before authors were recorded; /new starts afresh)';
}
