import { describe, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/gateway/message-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedId', () => {
  it('gives UUIDv7s that increase strictly, also many within one millisecond', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, timeOrderedId);
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(UUID_V7);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `id ${i}`).toBe(true);
    const millis = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(millis(ids[0]!)).toBeGreaterThanOrEqual(before);
    expect(millis(ids.at(-1)!)).toBeLessThanOrEqual(after + 1);
  });

  it('draws fresh random bits for every id', () => {
    const tails = new Set(Array.from({ length: 1_000 }, () => timeOrderedId().slice(-12)));
    expect(tails.size).toBe(1_000);
  });
});
