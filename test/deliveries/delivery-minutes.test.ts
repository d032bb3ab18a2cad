import { describe, expect, it } from 'vitest';
import { DeliveryMinutes, KEPT_MINUTES } from '../../src/deliveries/delivery-minutes.js';

const MINUTE = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);

describe('DeliveryMinutes', () => {
  it('counts each minute’s sends with their mean and slowest latency, oldest minute first', () => {
    const minutes = new DeliveryMinutes();
    minutes.record(T0 + 1_000, T0);
    minutes.record(T0 + 2_000, T0 - 1_000);
    minutes.record(T0 + MINUTE + 5, T0 + MINUTE);
    const last = minutes.last(T0 + MINUTE + 10);
    expect(last).toHaveLength(KEPT_MINUTES);
    expect(last.at(-1)).toEqual({ start: T0 + MINUTE, delivered: 1, meanMs: 5, maxMs: 5 });
    expect(last.at(-2)).toEqual({ start: T0, delivered: 2, meanMs: 2_000, maxMs: 3_000 });
    expect(last.slice(0, -2).every((minute) => minute.delivered === 0)).toBe(true);
  });

  it('forgets a minute once it is an hour old: its slot is reused, never grown', () => {
    const minutes = new DeliveryMinutes();
    minutes.record(T0, T0);
    minutes.record(T0 + KEPT_MINUTES * MINUTE, T0 + KEPT_MINUTES * MINUTE - 7);
    const last = minutes.last(T0 + KEPT_MINUTES * MINUTE);
    expect(last.reduce((sum, minute) => sum + minute.delivered, 0)).toBe(1);
    expect(last.at(-1)).toMatchObject({ delivered: 1, maxMs: 7 });
    // Read two hours on, nothing is left of either.
    expect(minutes.last(T0 + 3 * KEPT_MINUTES * MINUTE).every((minute) => minute.delivered === 0)).toBe(true);
  });
});
