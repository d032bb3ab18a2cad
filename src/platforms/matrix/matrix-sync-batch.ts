import { isRoomId } from './matrix-ids.js';

/** One joined room's part of a /sync answer. */
export interface SyncedRoom {
  readonly roomId: string;
  /** Its new timeline events, oldest first; untrusted. */
  readonly events: readonly unknown[];
  /** More happened since the last sync than the timeline holds: the rest comes from /messages, back from `prevBatch`. */
  readonly limited: boolean;
  readonly prevBatch: string | undefined;
}

/** What the adapter reads of a /sync answer. */
export interface SyncBatch {
  /** Where the next /sync starts: stored once this batch's events are accepted. */
  readonly nextBatch: string;
  readonly rooms: readonly SyncedRoom[];
  /** Rooms the bot was invited to: it does not join by itself. */
  readonly invitedRooms: readonly string[];
}

/**
 * The events, gaps and invites of a /sync answer, which is untrusted: a room id that is not one
 * is skipped, and an answer without `next_batch` is refused (a TypeError), since the stream
 * could not go on from it.
 */
export function parseSync(body: unknown): SyncBatch {
  const answer = record(body);
  const nextBatch = answer?.['next_batch'];
  if (typeof nextBatch !== 'string' || nextBatch === '') throw new TypeError('The homeserver answered /sync without a next_batch token');
  const rooms = record(answer!['rooms']);
  const joined = Object.entries(record(rooms?.['join']) ?? {}).flatMap(([roomId, value]): SyncedRoom[] => {
    if (!isRoomId(roomId)) return [];
    const timeline = record(record(value)?.['timeline']);
    const events = Array.isArray(timeline?.['events']) ? (timeline['events'] as unknown[]) : [];
    const prevBatch = timeline?.['prev_batch'];
    return [{ roomId, events, limited: timeline?.['limited'] === true, prevBatch: typeof prevBatch === 'string' && prevBatch !== '' ? prevBatch : undefined }];
  });
  const invitedRooms = Object.keys(record(rooms?.['invite']) ?? {}).filter(isRoomId);
  return { nextBatch, rooms: joined, invitedRooms };
}

/** The events of one /messages page (newest first, as read backwards) and the token of the next page, if any. */
export function parseMessagesPage(body: unknown): { readonly events: readonly unknown[]; readonly end: string | undefined } {
  const page = record(body);
  const events = Array.isArray(page?.['chunk']) ? (page['chunk'] as unknown[]) : [];
  const end = page?.['end'];
  return { events, end: typeof end === 'string' && end !== '' ? end : undefined };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
