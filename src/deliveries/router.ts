import { SpanKind, SpanStatusCode, isSpanContextValid, trace, type Attributes, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ThreadlineError } from '../errors.js';
import { recordFailure, type RoutingSnapshot, type Session } from '../session/index.js';
import type { HomeChannels, NewDelivery } from '../store/store.js';
import { MAX_ATTACHMENT_BYTES, MAX_BUTTON_COMMAND_BYTES, formatDestination, type Attachment, type CommandButton, type DeliveryKind } from '../session/delivery.js';
import { destinationOf } from '../session/routing-mismatch.js';
import type { DeliveryQueue } from './delivery-queue.js';
import { deliveryAttributes } from './outbox.js';
import { routingMismatch } from '../session/routing-mismatch.js';
import { TargetResolver } from './target-resolver.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import type { Target } from '../session/target.js';
import { ORIGIN_LINK_ATTRIBUTE } from '../session/snapshot.js';

export interface DeliveryRequest {
  /** Idempotency key; deterministic for replies, so a replayed turn does not send twice. */
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly text: string;
  /** Default: origin. */
  readonly target?: Target;
  readonly inReplyTo?: string | undefined;
  readonly attachment?: Attachment | undefined;
  /** The live message (a platform message id in the origin chat and thread) this text replaces; dropped for any other destination. */
  readonly replaces?: string | undefined;
  /** A button under the message that posts a command as its presser. */
  readonly button?: CommandButton | undefined;
  /** The routing captured where the work began; the misroute guard compares against it. */
  readonly origin: RoutingSnapshot;
}

export interface RouterOptions {
  /** THREADLINE_STRICT_ROUTING: refuse a delivery whose destination differs from its origin. */
  readonly strictRouting: boolean;
}

const ORIGIN: Target = { to: 'origin' };
const tracer = threadlineTracer();

/**
 * Decides where a delivery goes, by the TargetResolver's rules. For an origin delivery it compares
 * that destination with the routing captured where the work began (the misroute guard),
 * then hands the delivery to the outbox inside its gateway.deliver span.
 */
export class DeliveryRouter {
  private mismatchCount = 0;
  private readonly targets: TargetResolver;

  constructor(
    homes: HomeChannels,
    platforms: ReadonlySet<string>,
    private readonly outbox: DeliveryQueue,
    private readonly options: RouterOptions,
    private readonly logger: Logger,
    private readonly metrics: GatewayMetrics,
  ) {
    this.targets = new TargetResolver(homes, platforms);
  }

  /**
   * Delivers inside a gateway.deliver span; resolves as DeliveryQueue.send does. Throws
   * TL_TARGET_INVALID, TL_HOME_UNSET or TL_MISROUTE_REFUSED when nothing was recorded.
   */
  async deliver(request: DeliveryRequest): Promise<void> {
    const target = request.target ?? ORIGIN;
    if (request.attachment !== undefined && attachmentBytes(request.attachment) > MAX_ATTACHMENT_BYTES) {
      throw new ThreadlineError('TL_TOOL_INPUT', `An attachment may hold ${MAX_ATTACHMENT_BYTES} bytes; ${request.attachment.filename} is larger`);
    }
    if (request.button !== undefined && Buffer.byteLength(request.button.command) > MAX_BUTTON_COMMAND_BYTES) {
      throw new ThreadlineError('TL_TOOL_INPUT', `A button's command may hold ${MAX_BUTTON_COMMAND_BYTES} bytes`);
    }
    const origin = request.origin.session as Session;
    const destination = await this.targets.resolve(target, request.origin);
    return tracer.startActiveSpan('gateway.deliver', { kind: SpanKind.CLIENT, links: originLinks(request.origin) }, async (span) => {
      try {
        span.setAttributes(deliveryAttributes({ id: request.id, kind: request.kind, destination, origin: request.origin }, 1));
        span.setAttribute('delivery.target', target.to);
        const mismatch = routingMismatch(origin, destination);
        // An anchor is a message of the origin chat: elsewhere it would quote a stranger's.
        const anchored = request.inReplyTo !== undefined && mismatch === undefined;
        const delivery: NewDelivery = {
          id: request.id,
          kind: request.kind,
          destination,
          text: request.text,
          ...(anchored ? { inReplyTo: request.inReplyTo } : {}),
          ...(request.attachment === undefined ? {} : { attachment: request.attachment }),
          // Like the anchor: a message of the origin chat, never edited from elsewhere.
          ...(request.replaces !== undefined && target.to === 'origin' && mismatch === undefined ? { replaces: request.replaces } : {}),
          ...(request.button === undefined ? {} : { button: request.button }),
          origin: request.origin,
          createdAt: Date.now(),
        };
        if (target.to === 'origin' && mismatch !== undefined) await this.guard(span, mismatch, delivery);
        await this.outbox.send(delivery, span);
      } catch (error) {
        recordFailure(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** Origin deliveries flagged by the misroute guard since start. */
  mismatches(): number {
    return this.mismatchCount;
  }

  /**
   * Records an origin delivery bound elsewhere than its origin: event, ERROR status, metric and
   * warn log; when strict (the default), it is kept as a dead letter, never sent, and refused.
   */
  private async guard(span: Span, mismatch: Attributes, delivery: NewDelivery): Promise<void> {
    const { destination } = delivery;
    this.mismatchCount++;
    this.metrics.mismatch(destination.platform);
    span.addEvent('routing.mismatch', mismatch);
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'routing mismatch' });
    const strict = this.options.strictRouting;
    this.logger.warn(
      { routing: mismatch, destination: formatDestination(destination), delivery: delivery.id },
      strict ? 'delivery refused: its destination differs from its origin routing; kept as a dead letter' : 'delivery destination differs from its origin routing',
    );
    if (!strict) return;
    const error = new ThreadlineError(
      'TL_MISROUTE_REFUSED',
      `Refused a delivery to ${formatDestination(destination)}: the work that produced it began in ${formatDestination(destinationOf(delivery.origin.session as Session))} (THREADLINE_STRICT_ROUTING)`,
    );
    await this.outbox.refuse(delivery, error.message, span);
    throw error;
  }
}

/**
 * A link to the span that captured the origin when it lies in another trace (work resumed
 * in a new one, or work that ran in a stranger's context), so Jaeger shows where it came from.
 */
function originLinks(origin: RoutingSnapshot): Link[] {
  const work = origin.origin;
  if (work === undefined || work.traceId === trace.getActiveSpan()?.spanContext().traceId) return [];
  const context: SpanContext = { traceId: work.traceId, spanId: work.spanId, traceFlags: work.traceFlags, isRemote: true };
  return isSpanContextValid(context) ? [{ context, attributes: { [ORIGIN_LINK_ATTRIBUTE]: 'origin' } }] : [];
}

/** The decoded size of a base64 attachment, without decoding it. */
function attachmentBytes(attachment: Attachment): number {
  const { dataBase64 } = attachment;
  const padding = dataBase64.endsWith('==') ? 2 : dataBase64.endsWith('=') ? 1 : 0;
  return Math.floor((dataBase64.length * 3) / 4) - padding;
}
