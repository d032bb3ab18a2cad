import { trace, type SpanContext } from '@opentelemetry/api';
import type { Destination } from '../../../src/session/delivery.js';
import type { DeliveryRequest } from '../../../src/deliveries/router.js';
import { TargetResolver } from '../../../src/deliveries/target-resolver.js';
import { getSession, type Session } from '../../../src/session/index.js';
import type { Clock } from '../../../src/tools/clock.js';
import type { Deliverer } from '../../../src/tools/deliver-later.js';

/** A delivery as the deliverer saw it: the request, and the context and time it came in. */
export interface Delivered {
  readonly request: DeliveryRequest;
  readonly destination: Destination;
  /** The session active when deliver() was called. */
  readonly session: Session | undefined;
  /** The span active when deliver() was called. */
  readonly span: SpanContext | undefined;
  readonly at: number;
}

/**
 * A Deliverer that resolves targets with the router's TargetResolver (home channels from
 * `homes`, platforms from the enabled set) and records each delivery with its context.
 */
export class RecordingDeliverer implements Deliverer {
  readonly delivered: Delivered[] = [];
  readonly homes = new Map<string, Destination>();
  /** Calls of deliver(), failed ones included. */
  attempts = 0;
  /** Decides a delivery's failure before it is resolved; what it returns is thrown. */
  failWith: ((request: DeliveryRequest) => unknown) | undefined;
  /** Awaited before each delivery is recorded, for a test that holds one in flight. */
  gate: Promise<void> | undefined;
  /** Called as each delivery comes in, before the gate. */
  onAttempt: ((request: DeliveryRequest) => void) | undefined;

  private readonly targets: TargetResolver;

  constructor(
    private readonly clock: Clock,
    platforms: ReadonlySet<string>,
  ) {
    this.targets = new TargetResolver({ get: async (platform) => this.homes.get(platform) }, platforms);
  }

  async deliver(request: DeliveryRequest): Promise<void> {
    this.attempts++;
    this.onAttempt?.(request);
    const failure = this.failWith?.(request);
    if (failure !== undefined) throw failure;
    const session = getSession();
    const span = trace.getActiveSpan()?.spanContext();
    const destination = await this.targets.resolve(request.target ?? { to: 'origin' }, request.origin);
    await this.gate;
    this.delivered.push({ request, destination, session, span, at: this.clock.now() });
  }

  /** The deliveries whose id is `id`. */
  withId(id: string): Delivered[] {
    return this.delivered.filter((delivery) => delivery.request.id === id);
  }
}
