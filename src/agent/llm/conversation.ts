import type { HistoryEntry } from '../../store/store.js';
import { UNKNOWN_AUTHOR, mirroredAuthor, unionOfAuthors, type Author } from '../author.js';
import type { ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam } from './model-types.js';

/** Longest text kept of one history entry, in UTF-16 code units: bounds the store and each request. */
export const MAX_ENTRY_CHARS = 16_000;

/** A function call as history keeps it, in an assistant entry's `extra`. */
export interface StoredToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** `text` cut to MAX_ENTRY_CHARS, saying so, so a huge tool output cannot grow the store or a request without bound. */
export function boundedText(text: string): string {
  if (text.length <= MAX_ENTRY_CHARS) return text;
  const note = `\n[cut: ${text.length - MAX_ENTRY_CHARS} more characters]`;
  return text.slice(0, MAX_ENTRY_CHARS - note.length) + note;
}

/** The user's message, as history keeps it, with its sender. */
export function userEntry(text: string, at: number, author: Author): HistoryEntry {
  return { role: 'user', text: boundedText(text), extra: JSON.stringify({ authors: [author] }), at };
}

/**
 * An answer of the model, with the function calls it made (kept in `extra`, as JSON), and the
 * authors of everything the model had read when it wrote it: what it says may repeat them.
 */
export function assistantEntry(text: string, toolCalls: readonly ChatCompletionMessageFunctionToolCall[], at: number, authors: readonly Author[]): HistoryEntry {
  const calls: StoredToolCall[] = toolCalls.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }));
  return {
    role: 'assistant',
    text: boundedText(text),
    extra: JSON.stringify({ authors, ...(calls.length === 0 ? {} : { toolCalls: calls }) }),
    at,
  };
}

/** What a tool call answered (a result, or `error: ...`), tied to its call by id; `more` adds to `extra`. */
export function toolEntry(toolCallId: string, text: string, at: number, authors: readonly Author[], more: Record<string, unknown> = {}): HistoryEntry {
  return { role: 'tool', text: boundedText(text), extra: JSON.stringify({ ...more, toolCallId, authors }), at };
}

/**
 * Who wrote an entry, or whose text the model had read when it did: recorded at write time.
 * Mirrored text is its source's; an entry of an older version, which recorded nobody, is
 * UNKNOWN_AUTHOR's, who holds no rights.
 */
export function authorsOf(entry: HistoryEntry): Author[] {
  if (entry.source !== undefined) return [mirroredAuthor(entry.source)];
  const extra = parseExtra(entry.extra) as { authors?: unknown } | undefined;
  const authors = Array.isArray(extra?.authors) ? extra.authors.filter((author): author is string => typeof author === 'string') : [];
  return authors.length === 0 ? [UNKNOWN_AUTHOR] : unionOfAuthors(authors);
}

/** What `extra` holds besides text: a tool call's confirmation, say. Undefined when unreadable. */
export function extraOf(entry: HistoryEntry): Record<string, unknown> | undefined {
  const extra = parseExtra(entry.extra);
  return typeof extra === 'object' && extra !== null && !Array.isArray(extra) ? (extra as Record<string, unknown>) : undefined;
}

/**
 * History as Chat Completions messages. Mirrored entries (with `source`) become user
 * messages prefixed `[from <source>]`. The result is always a sequence the API accepts:
 * a tool result whose call is not in the window (cut off by the history limit) is left
 * out, a message that lands between a call and its result (a mirror written while the tool
 * ran) moves after the results, and a call without a recorded result (a stopped turn) gets one.
 */
export function historyMessages(entries: readonly HistoryEntry[]): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  /** Calls of the last assistant message not yet answered. */
  const open = new Set<string>();
  /** Messages held back until the open calls are answered. */
  let held: ChatCompletionMessageParam[] = [];
  const closeOpenCalls = (): void => {
    for (const id of open) messages.push({ role: 'tool', tool_call_id: id, content: 'error: no result was recorded for this call' });
    open.clear();
    messages.push(...held);
    held = [];
  };
  for (const entry of entries) {
    if (entry.source !== undefined) {
      const mirrored: ChatCompletionMessageParam = { role: 'user', content: `[from ${entry.source}] ${entry.text}` };
      if (open.size > 0) held.push(mirrored);
      else messages.push(mirrored);
      continue;
    }
    if (entry.role === 'tool') {
      const id = toolCallIdOf(entry);
      if (id === undefined || !open.has(id)) continue;
      messages.push({ role: 'tool', tool_call_id: id, content: entry.text });
      open.delete(id);
      if (open.size === 0) closeOpenCalls();
      continue;
    }
    closeOpenCalls();
    if (entry.role === 'user') {
      messages.push({ role: 'user', content: entry.text });
      continue;
    }
    const calls = toolCallsOf(entry);
    if (calls.length === 0) {
      messages.push({ role: 'assistant', content: entry.text });
      continue;
    }
    messages.push({
      role: 'assistant',
      content: entry.text === '' ? null : entry.text,
      tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
    });
    for (const call of calls) open.add(call.id);
  }
  closeOpenCalls();
  return messages;
}

/** The calls of an assistant entry; none when `extra` is absent or unreadable (then it is plain text). */
function toolCallsOf(entry: HistoryEntry): StoredToolCall[] {
  const extra = parseExtra(entry.extra) as { toolCalls?: unknown } | undefined;
  if (!Array.isArray(extra?.toolCalls)) return [];
  return extra.toolCalls.filter(
    (call): call is StoredToolCall =>
      typeof call === 'object' &&
      call !== null &&
      typeof (call as StoredToolCall).id === 'string' &&
      typeof (call as StoredToolCall).name === 'string' &&
      typeof (call as StoredToolCall).arguments === 'string',
  );
}

function toolCallIdOf(entry: HistoryEntry): string | undefined {
  const extra = parseExtra(entry.extra) as { toolCallId?: unknown } | undefined;
  return typeof extra?.toolCallId === 'string' ? extra.toolCallId : undefined;
}

function parseExtra(extra: string | undefined): unknown {
  if (extra === undefined) return undefined;
  try {
    return JSON.parse(extra) as unknown;
  } catch {
    // Written by another version, or damaged: read as plain text rather than failing the turn.
    return undefined;
  }
}
