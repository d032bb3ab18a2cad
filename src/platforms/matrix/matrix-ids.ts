/**
 * Matrix identifiers as the spec spells them: a sigil, then printable ASCII, 255 bytes at most.
 * Room ids of room version 12 have no server name (`!<hash>`), older ones do (`!opaque:server`).
 */
const ROOM_ID = /^![\x21-\x7e]{1,254}$/;
const EVENT_ID = /^\$[\x21-\x7e]{1,254}$/;
const USER_ID = /^@[\x21-\x39\x3b-\x7e]+:[\x21-\x7e]+$/;

export function isRoomId(value: unknown): value is string {
  return typeof value === 'string' && ROOM_ID.test(value);
}

export function isEventId(value: unknown): value is string {
  return typeof value === 'string' && EVENT_ID.test(value);
}

export function isUserId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 255 && USER_ID.test(value);
}
