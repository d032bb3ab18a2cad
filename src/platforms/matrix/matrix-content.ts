import type { Attachment } from '../../session/delivery.js';

/**
 * The longest text one event carries, in UTF-8 bytes: a homeserver refuses events over 64 KiB,
 * and an edit carries its text twice (the fallback and `m.new_content`).
 */
export const MATRIX_TEXT_MAX_BYTES = 30_000;

/** Where in its room a message goes: the thread, and the message it answers. */
export type Placement = { readonly 'm.relates_to'?: Record<string, unknown> };

/**
 * In a thread: the `m.thread` relation to its root, with `m.in_reply_to` (the message answered,
 * else the root) as the fallback that clients without threads show (`is_falling_back`), so no
 * client shows the answer outside the thread. Outside one: a reply to the message answered, if any.
 */
export function placementOf(threadId: string | undefined, answered: string | undefined): Placement {
  if (threadId !== undefined) {
    return { 'm.relates_to': { rel_type: 'm.thread', event_id: threadId, is_falling_back: true, 'm.in_reply_to': { event_id: answered ?? threadId } } };
  }
  return answered === undefined ? {} : { 'm.relates_to': { 'm.in_reply_to': { event_id: answered } } };
}

/**
 * A text the bot sends: `m.notice`, which bots send and do not answer (no two bots talk
 * forever), and an empty `m.mentions`, so nobody is notified by a name the text holds.
 */
export function noticeContent(text: string, placement: Placement): Record<string, unknown> {
  return { msgtype: 'm.notice', body: cut(text), 'm.mentions': {}, ...placement };
}

/** An edit (`m.replace`) of event `eventId` into `text`; `* text` for clients that show edits as messages. */
export function editContent(eventId: string, text: string): Record<string, unknown> {
  const body = cut(text);
  return {
    msgtype: 'm.notice',
    body: `* ${body}`,
    'm.mentions': {},
    'm.new_content': { msgtype: 'm.notice', body, 'm.mentions': {} },
    'm.relates_to': { rel_type: 'm.replace', event_id: eventId },
  };
}

/** A file as `m.audio` (audio types) or `m.file`, its caption the text when there is one (Matrix 1.10 `filename`). */
export function fileContent(attachment: Attachment, uri: string, size: number, caption: string, placement: Placement): Record<string, unknown> {
  const audio = attachment.contentType.toLowerCase().startsWith('audio/');
  return {
    msgtype: audio ? 'm.audio' : 'm.file',
    body: caption === '' ? attachment.filename : cut(caption),
    filename: attachment.filename,
    url: uri,
    info: { mimetype: attachment.contentType, size },
    'm.mentions': {},
    ...placement,
  };
}

/** `text` cut to MATRIX_TEXT_MAX_BYTES by whole characters. */
function cut(text: string): string {
  if (Buffer.byteLength(text) <= MATRIX_TEXT_MAX_BYTES) return text;
  let bytes = 0;
  let kept = '';
  for (const character of text) {
    bytes += Buffer.byteLength(character);
    if (bytes > MATRIX_TEXT_MAX_BYTES - 3) break;
    kept += character;
  }
  return `${kept}…`;
}
