const MINUTE_MS = 60_000;
/** Minutes kept: the operator's page charts the last hour. */
export const KEPT_MINUTES = 60;

/** One minute of this instance's sends: how many, and how long they took from being recorded. */
export interface DeliveryMinute {
  /** ms since the epoch, on a whole minute. */
  readonly start: number;
  readonly delivered: number;
  /** Undefined in a minute without deliveries. */
  readonly meanMs?: number;
  readonly maxMs?: number;
}

interface Slot {
  minute: number;
  delivered: number;
  totalMs: number;
  maxMs: number;
}

/**
 * Deliveries sent a minute over the last KEPT_MINUTES, with their latency from being recorded
 * in the outbox to the platform's acceptance: a ring of one slot a minute, so its memory is
 * fixed however many are sent.
 */
export class DeliveryMinutes {
  private readonly slots: Slot[] = Array.from({ length: KEPT_MINUTES }, () => ({ minute: -1, delivered: 0, totalMs: 0, maxMs: 0 }));

  /** A delivery recorded at `createdAt` was accepted by its platform at `sentAt`. */
  record(sentAt: number, createdAt: number): void {
    const minute = Math.floor(sentAt / MINUTE_MS);
    const slot = this.slots[minute % KEPT_MINUTES]!;
    if (slot.minute !== minute) Object.assign(slot, { minute, delivered: 0, totalMs: 0, maxMs: 0 });
    const latency = Math.max(0, sentAt - createdAt);
    slot.delivered++;
    slot.totalMs += latency;
    slot.maxMs = Math.max(slot.maxMs, latency);
  }

  /** The KEPT_MINUTES minutes up to the one holding `now`, oldest first. */
  last(now: number): DeliveryMinute[] {
    const current = Math.floor(now / MINUTE_MS);
    return Array.from({ length: KEPT_MINUTES }, (_, index) => {
      const minute = current - KEPT_MINUTES + 1 + index;
      const slot = this.slots[minute % KEPT_MINUTES]!;
      const start = minute * MINUTE_MS;
      if (slot.minute !== minute || slot.delivered === 0) return { start, delivered: 0 };
      return { start, delivered: slot.delivered, meanMs: slot.totalMs / slot.delivered, maxMs: slot.maxMs };
    });
  }
}
