import { trace } from '@opentelemetry/api';
import { captureRouting, runResumed, type RoutingSnapshot } from '../session/index.js';
import type { DeliveryRequest } from '../deliveries/router.js';

/** What background work hands its deliveries to: the gateway's router. */
export interface Deliverer {
  deliver(request: DeliveryRequest): Promise<void>;
}

/**
 * Delivers on behalf of work that outlived its message (a watcher, a reminder): in a new
 * trace, root span `spanName`, linked to the span that captured `origin`, with the origin's
 * session entered, so the delivery's spans carry the origin chat and thread and the target
 * `origin` resolves from this context and nothing else. The root span names the delivery.
 */
export function deliverLater(
  deliverer: Deliverer,
  origin: RoutingSnapshot,
  spanName: string,
  request: Omit<DeliveryRequest, 'origin'>,
): Promise<void> {
  return runResumed(origin, spanName, () => {
    // On the root too: work that fails before its delivery is recorded still names it.
    trace.getActiveSpan()?.setAttributes({ 'delivery.id': request.id, 'delivery.kind': request.kind });
    return deliverer.deliver({ ...request, origin: captureRouting() });
  });
}
