import type { Delivery } from '../session/delivery.js';

/** A UUIDv7: its first 48 bits are the Unix time in milliseconds it was made. */
const UUID_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-/i;

/**
 * When the gateway accepted the work a delivery answers, in ms since the epoch. A reply's id
 * begins with the id of the message it answers, a UUIDv7 made as that message was accepted:
 * so the time survives the store (SQLite or Redis) and a restart with nothing more stored.
 * Any other delivery (a notification, a scheduled run, a send) is its own work: its creation.
 */
export function deliveryAcceptedAt(delivery: Pick<Delivery, 'id' | 'kind' | 'createdAt'>): number {
  if (delivery.kind !== 'reply') return delivery.createdAt;
  const match = UUID_V7.exec(delivery.id);
  if (match === null) return delivery.createdAt;
  const acceptedAt = Number.parseInt(match[1]! + match[2]!, 16);
  // A message is accepted before its reply is made; anything else is not this convention.
  return acceptedAt <= delivery.createdAt ? acceptedAt : delivery.createdAt;
}
