import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { getSession, type Session } from '../session/index.js';
import { checkAttributeOptions, sessionAttributePairs, type AttributePairs, type SessionAttributeOptions } from './session-attributes.js';

/**
 * Stamps every span, including those of auto-instrumentations, with the routing of the
 * session it was started in.
 *
 * The session is read from `parentContext`, the context the span was started with, never
 * from context.active(): a span started with an explicit context (a resumed job, a link to
 * another message) must carry that context's routing, not the caller's
 * (pitfall: Stamping from the active context).
 *
 * Attributes are computed once per session object and cached, so the per-span cost is a
 * context read, a comparison (or a WeakMap lookup) and a setAttribute per attribute (bench/core.ts).
 */
export class SessionSpanProcessor implements SpanProcessor {
  private readonly options: ReturnType<typeof checkAttributeOptions>;
  private readonly cache = new WeakMap<Session, AttributePairs>();
  /** The last session stamped and its pairs: consecutive spans mostly share a session. */
  private last: { session: Session | undefined; pairs: AttributePairs } = { session: undefined, pairs: [] };

  constructor(options: SessionAttributeOptions = {}) {
    this.options = checkAttributeOptions(options);
  }

  onStart(span: Span, parentContext: Context): void {
    const session = getSession(parentContext);
    if (session === undefined) return;
    const pairs = session === this.last.session ? this.last.pairs : this.pairsOf(session);
    for (let i = 0; i < pairs.length; i += 2) {
      span.setAttribute(pairs[i] as string, pairs[i + 1]!);
    }
  }

  onEnd(_span: ReadableSpan): void {}

  private pairsOf(session: Session): AttributePairs {
    let pairs = this.cache.get(session);
    if (pairs === undefined) {
      pairs = sessionAttributePairs(session, this.options);
      this.cache.set(session, pairs);
    }
    this.last = { session, pairs };
    return pairs;
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
