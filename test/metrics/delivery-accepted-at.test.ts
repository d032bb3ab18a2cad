import { v7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/gateway/message-id.js';
import { deliveryAcceptedAt } from '../../src/telemetry/delivery-accepted-at.js';

describe('deliveryAcceptedAt', () => {
  it("reads a reply's acceptance from the id of the message it answers", () => {
    const acceptedAt = Date.UTC(2026, 11, 7, 12, 0, 0, 123);
    const id = `${v7({ msecs: acceptedAt })}/1-abcdefghij`;
    expect(deliveryAcceptedAt({ id, kind: 'reply', createdAt: acceptedAt + 4_000 })).toBe(acceptedAt);
  });

  it('reads it from the ids the gateway gives messages', () => {
    const before = Date.now();
    const id = `${timeOrderedId()}/2-abcdefghij`;
    const at = deliveryAcceptedAt({ id, kind: 'reply', createdAt: Date.now() + 1 });
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });

  it('takes the creation for the other kinds, for a reply whose id is not a message id, and for one made before its message', () => {
    const createdAt = Date.now();
    const id = `${v7({ msecs: createdAt - 1_000 })}/1-x`;
    expect(deliveryAcceptedAt({ id, kind: 'notification', createdAt })).toBe(createdAt);
    expect(deliveryAcceptedAt({ id: 'proc:abc:done', kind: 'reply', createdAt })).toBe(createdAt);
    expect(deliveryAcceptedAt({ id: `${v7({ msecs: createdAt + 60_000 })}/1-x`, kind: 'reply', createdAt })).toBe(createdAt);
  });
});
