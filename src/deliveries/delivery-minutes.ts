const MINUTE_MS = 60_000;
/** Minutes kept: the operator's page charts the last hour. */
export const KEPT_MINUTES = 60;

/** One minute of this instance's sends: how many, and how long they took from the work's acceptance. */
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
 * Deliveries sent a minute over the last KEPT_MINUTES, with their latency from the work's
 * acceptance (deliveryAcceptedAt: a reply's message, else its creation) to the platform's: the
 * SLO threadline.delivery.latency measures. A ring of one slot a minute: its memory is fixed
 * however many are sent.
 */
export class DeliveryMinutes {
  private readonly slots: Slot[] = Array.from({ length: KEPT_MINUTES }, () => ({ minute: -1, delivered: 0, totalMs: 0, maxMs: 0 }));

  /** A delivery whose work was accepted at `acceptedAt` was accepted by its platform at `sentAt`. */
  record(sentAt: number, acceptedAt: number): void {
    const minute = Math.floor(sentAt / MINUTE_MS);
    const slot = this.slots[minute % KEPT_MINUTES]!;
    if (slot.minute !== minute) Object.assign(slot, { minute, delivered: 0, totalMs: 0, maxMs: 0 });
    const latency = Math.max(0, sentAt - acceptedAt);
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
