import { trace, type SpanContext } from '@opentelemetry/api';
import type { Destination } from '../../../src/session/delivery.js';
import type { DeliveryRequest } from '../../../src/deliveries/router.js';
import { destinationOf } from '../../../src/session/routing-mismatch.js';
import { ThreadlineError } from '../../../src/errors.js';
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
 * A Deliverer that resolves targets as the gateway's router does (origin from the active
 * session, home from `homes`, platforms from the enabled set, TL_HOME_UNSET and
 * TL_TARGET_INVALID alike) and records each delivery with its context.
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

  constructor(
    private readonly clock: Clock,
    private readonly platforms: ReadonlySet<string>,
  ) {}

  async deliver(request: DeliveryRequest): Promise<void> {
    this.attempts++;
    this.onAttempt?.(request);
    const failure = this.failWith?.(request);
    if (failure !== undefined) throw failure;
    const session = getSession();
    const span = trace.getActiveSpan()?.spanContext();
    const destination = this.resolve(request, session);
    await this.gate;
    this.delivered.push({ request, destination, session, span, at: this.clock.now() });
  }

  /** The deliveries whose id is `id`. */
  withId(id: string): Delivered[] {
    return this.delivered.filter((delivery) => delivery.request.id === id);
  }

  private resolve(request: DeliveryRequest, session: Session | undefined): Destination {
    const target = request.target ?? { to: 'origin' };
    const origin = session ?? (request.origin.session as Session);
    let destination: Destination;
    if (target.to === 'explicit') destination = target.destination;
    else if (target.to === 'origin') destination = destinationOf(origin);
    else {
      const platform = target.platform ?? origin.platform;
      const home = this.homes.get(platform);
      if (home === undefined) throw new ThreadlineError('TL_HOME_UNSET', `${platform} has no home channel; send /sethome in the chat that should be it`);
      destination = home;
    }
    if (!this.platforms.has(destination.platform)) {
      throw new ThreadlineError('TL_TARGET_INVALID', `No platform "${destination.platform}" is enabled in this gateway`);
    }
    return destination;
  }
}
