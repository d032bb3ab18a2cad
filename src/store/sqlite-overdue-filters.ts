/**
 * The named parameters of the forensics reads: only what is due before `before`, at most
 * `limit`; with `filtered` 1, only what a chat (and thread) matches. `chat_id` and `thread_id`
 * are plain ids (null: any), matched in routing snapshots; `chat` and `thread` the same ids
 * percent-encoded, as formatDestination spells them, matched in destinations.
 */
export interface OverdueParameters {
  before: number;
  limit: number;
  filtered: 0 | 1;
  chat_id: string | null;
  thread_id: string | null;
  chat: string | null;
  thread: string | null;
}

/**
 * True when the destination spelled in `column` (formatDestination's `platform:chat[:thread]`,
 * or NULL) is of the asked chat and thread (OverdueParameters). Encoded ids hold no ':', so
 * after the platform comes the chat, then ':' and the thread when there is one.
 */
export function destinationMatches(column: string): string {
  const rest = `substr(${column}, instr(${column}, ':') + 1)`;
  return `(instr(${column}, ':') > 0
    AND (@chat IS NULL OR ${rest} = @chat OR substr(${rest}, 1, length(@chat) + 1) = @chat || ':')
    AND (@thread IS NULL OR (instr(${rest}, ':') > 0 AND substr(${rest}, instr(${rest}, ':') + 1) = @thread)))`;
}

/** True when the routing snapshot (JSON) in `column` is of the asked chat and thread (OverdueParameters). */
export function originMatches(column: string): string {
  return `(json_valid(${column})
    AND (@chat_id IS NULL OR json_extract(${column}, '$.session.chatId') = @chat_id)
    AND (@thread_id IS NULL OR json_extract(${column}, '$.session.threadId') = @thread_id))`;
}
