import { trace } from '@opentelemetry/api';
import type { DeliveryRequest } from '../../../src/deliveries/router.js';
import { getSession, type Session } from '../../../src/session/index.js';
import type { Deliverer } from '../../../src/tools/deliver-later.js';

/** A delivery as recorded, with the session and span active when it was handed over. */
export interface RecordedDelivery {
  readonly request: DeliveryRequest;
  readonly session: Session | undefined;
  readonly traceId: string | undefined;
}

/** A Deliverer that records every request and the context it arrived in; `waitFor` resolves on a match. */
export class RecordingDeliverer implements Deliverer {
  readonly deliveries: RecordedDelivery[] = [];
  private waiters: { match: (delivery: RecordedDelivery) => boolean; resolve: (delivery: RecordedDelivery) => void }[] = [];
  /** Set to make the next deliveries fail, as a full outbox would. */
  failWith: Error | undefined;

  async deliver(request: DeliveryRequest): Promise<void> {
    if (this.failWith !== undefined) throw this.failWith;
    const delivery = { request, session: getSession(), traceId: trace.getActiveSpan()?.spanContext().traceId };
    this.deliveries.push(delivery);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.match(delivery)) return true;
      waiter.resolve(delivery);
      return false;
    });
  }

  /** The first delivery (already made or coming) whose id is `id`. */
  waitFor(id: string): Promise<RecordedDelivery> {
    const match = (delivery: RecordedDelivery): boolean => delivery.request.id === id;
    const made = this.deliveries.find(match);
    if (made !== undefined) return Promise.resolve(made);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  ids(): string[] {
    return this.deliveries.map((delivery) => delivery.request.id);
  }
}
