import { SpanKind, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import type { Session } from '../session/index.js';
import { threadlineTracer } from '../telemetry/tracer.js';

const tracer = threadlineTracer();

/** Semantic conventions of a platform message taken in: the platform is the messaging system. */
export function receiveAttributes(session: Session): Attributes {
  return { 'messaging.system': session.platform, 'messaging.operation.type': 'receive' };
}

/** Starts a message's gateway.message span in `parent`; the job runs in the returned context. */
export function startMessageSpan(parent: Context, links: Link[], attributes: Attributes): { context: Context; span: Span } {
  const span = tracer.startSpan('gateway.message', { kind: SpanKind.SERVER, links, attributes }, parent);
  return { context: trace.setSpan(parent, span), span };
}
