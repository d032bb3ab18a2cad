import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/queue/slots.js';

describe('Slots', () => {
  it('takes at once up to its capacity, then refuses', () => {
    const slots = new Slots(2);
    expect([slots.tryTake(), slots.tryTake(), slots.tryTake()]).toEqual([true, true, false]);
    slots.give();
    expect(slots.tryTake()).toBe(true);
  });

  it('serves waiters in order, before a claim at once', async () => {
    const slots = new Slots(1);
    expect(slots.tryTake()).toBe(true);
    const served: string[] = [];
    const first = slots.takeWithin(60_000).then((taken) => taken && served.push('first'));
    const second = slots.takeWithin(60_000).then((taken) => taken && served.push('second'));
    slots.give();
    // A slot given while someone waits goes to the waiter: a claim at once does not overtake it.
    expect(slots.tryTake()).toBe(false);
    await first;
    slots.give();
    await second;
    expect(served).toEqual(['first', 'second']);
    expect(slots.inUse).toBe(1);
  });
});
