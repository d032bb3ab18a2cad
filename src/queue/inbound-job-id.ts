/**
 * The BullMQ job id of an inbound message: its id made safe for BullMQ, which refuses ids
 * that are integers or hold ':' (message ids from platforms may hold ':' and '/'). Stable, so
 * a replayed offer of a message still in the queue adds nothing. The real id stays in the job data.
 */
export function inboundJobId(messageId: string): string {
  // encodeURIComponent turns ':' into %3A; the prefix keeps an all-digits id from being an integer.
  return `m-${encodeURIComponent(messageId)}`;
}
