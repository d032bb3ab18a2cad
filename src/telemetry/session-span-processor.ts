import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SESSION_KEY, type Session } from '../session/index.js';
import { checkAttributeOptions, sessionAttributePairs, type AttributePairs, type SessionAttributeOptions } from './session-attributes.js';

/**
 * Stamps every span, including those of auto-instrumentations, with the routing of the
 * session it was started in.
 *
 * The session is read from `parentContext`, the context the span was started with, never
 * from context.active(): a span started with an explicit context (a resumed job, a link to
 * another message) must carry that context's routing, not the caller's (lesson 17).
 *
 * Attributes are computed once per session object and cached, so the per-span cost is one
 * WeakMap lookup and a few setAttribute calls (see bench/core.ts).
 */
export class SessionSpanProcessor implements SpanProcessor {
  private readonly options: ReturnType<typeof checkAttributeOptions>;
  private readonly cache = new WeakMap<Session, AttributePairs>();

  constructor(options: SessionAttributeOptions = {}) {
    this.options = checkAttributeOptions(options);
  }

  onStart(span: Span, parentContext: Context): void {
    const session = parentContext.getValue(SESSION_KEY) as Session | undefined;
    if (session === undefined) return;
    let pairs = this.cache.get(session);
    if (pairs === undefined) {
      pairs = sessionAttributePairs(session, this.options);
      this.cache.set(session, pairs);
    }
    for (let i = 0; i < pairs.length; i += 2) {
      span.setAttribute(pairs[i] as string, pairs[i + 1]!);
    }
  }

  onEnd(_span: ReadableSpan): void {}

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
