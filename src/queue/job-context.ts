import { ROOT_CONTEXT, isSpanContextValid, propagation, trace, type Context, type Link } from '@opentelemetry/api';
import { activeContext, captureRouting, resumeRouting, type Carrier, type RoutingSnapshot } from '../session/index.js';

/** What a queue job carries of the context it was made in: plain JSON, safe in Redis. */
export interface JobContext {
  /** The routing of the producing work: the consumer's session comes from here alone. */
  readonly routing: RoutingSnapshot;
  /** traceparent, tracestate and baggage as the global propagator writes them. */
  readonly carrier: Carrier;
}

/** Link attribute naming the producer of a queue job, beside the core's `origin`. */
export const PRODUCER_LINK = 'producer';

/**
 * Captures the producing context (default: active) for a job: its trace parent and baggage,
 * and `routing` when the work already has one (a reply's origin, a replayed message's first
 * capture), so the consumer links to where the work began; else the routing of `ctx`. Throws
 * TL_SESSION_MISSING outside a session.
 */
export function jobContextOf(ctx: Context = activeContext(), routing?: RoutingSnapshot): JobContext {
  const carrier: Carrier = {};
  propagation.inject(ctx, carrier);
  return { routing: routing ?? captureRouting(ctx), carrier };
}

/**
 * The context a consumer starts its span in: the session resumed from the job's routing
 * snapshot (never from the carrier's baggage, which anyone who can write to Redis could forge)
 * and the producer's span as parent, so the trace stays one story. `links` point at the
 * origin and at the producer, for trace stores that show links but not remote parents.
 * Throws TL_SNAPSHOT_INVALID or TL_SESSION_INVALID for a damaged snapshot.
 */
export function consumerContext(job: JobContext): { context: Context; links: Link[] } {
  const resumed = resumeRouting(job.routing);
  const producer = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, job.carrier ?? {}));
  if (producer === undefined || !isSpanContextValid(producer)) return resumed;
  return {
    context: trace.setSpanContext(resumed.context, producer),
    links: [...resumed.links, { context: producer, attributes: { 'threadline.link': PRODUCER_LINK } }],
  };
}
