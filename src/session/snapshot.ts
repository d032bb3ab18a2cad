import { ROOT_CONTEXT, TraceFlags, isSpanContextValid, trace, type Context, type Link, type SpanContext } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';
import { recordFailure } from './record-failure.js';
import { contextWithSession, requireSession } from './run-with-session.js';
import type { SessionInput } from './session.js';
import { VERSION } from '../version.js';
import { createSession } from './validate-session.js';
import { activeContext } from './active-context.js';

/**
 * The routing of a message, captured to outlive it: a background watcher, a timer, a
 * scheduled job, a queue message or a restart. Plain JSON. `origin` is the span that
 * captured it, so resumed work links back to the message that caused it.
 */
export interface RoutingSnapshot {
  readonly v: 1;
  readonly session: SessionInput & { readonly sessionId: string };
  readonly origin?: { readonly traceId: string; readonly spanId: string; readonly traceFlags: number };
}

/** Work resumed from a snapshot: start its first span in `context` with `links`. */
export interface ResumedRouting {
  readonly context: Context;
  readonly links: Link[];
}

export const ORIGIN_LINK_ATTRIBUTE = 'threadline.link';

/** Captures the routing of `ctx` (default: active). Throws TL_SESSION_MISSING outside a session. */
export function captureRouting(ctx: Context = activeContext()): RoutingSnapshot {
  const session = requireSession(ctx);
  const span = trace.getSpanContext(ctx);
  // Frozen, so a store may keep its encoding: a snapshot is a record of one moment.
  const captured = Object.freeze({ ...session });
  if (span === undefined || !isSpanContextValid(span)) return Object.freeze({ v: 1, session: captured });
  const origin = Object.freeze({ traceId: span.traceId, spanId: span.spanId, traceFlags: span.traceFlags });
  return Object.freeze({ v: 1, session: captured, origin });
}

/**
 * Turns a snapshot (possibly parsed from disk or a queue) back into a fresh context built
 * from the root, so nothing of whoever resumes it leaks in. The snapshot is validated again:
 * after a restart it is just data. Throws TL_SNAPSHOT_INVALID or TL_SESSION_INVALID.
 */
export function resumeRouting(snapshot: unknown): ResumedRouting {
  if (typeof snapshot !== 'object' || snapshot === null || (snapshot as { v?: unknown }).v !== 1) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', 'Not a routing snapshot of version 1; capture it with captureRouting()');
  }
  const { session, origin } = snapshot as { session?: unknown; origin?: unknown };
  const resumed = contextWithSession(ROOT_CONTEXT, createSession(session as SessionInput));
  if (origin === undefined) return { context: resumed, links: [] };
  const spanContext = originSpanContext(origin);
  return { context: resumed, links: [{ context: spanContext, attributes: { [ORIGIN_LINK_ATTRIBUTE]: 'origin' } }] };
}

/**
 * Resumes a snapshot and runs `fn` inside a new root span `name` that links to the origin.
 * The span ends when `fn` returns or its promise settles.
 */
export function runResumed<T>(snapshot: unknown, name: string, fn: () => T): T {
  const { context: resumed, links } = resumeRouting(snapshot);
  const tracer = trace.getTracer('threadline', VERSION);
  return tracer.startActiveSpan(name, { links, root: true }, resumed, (span) => {
    const end = (error?: unknown): void => {
      if (error !== undefined) recordFailure(span, error);
      span.end();
    };
    let result: T;
    try {
      result = fn();
    } catch (error) {
      end(error);
      throw error;
    }
    // Any thenable, not only a native Promise, keeps the span open until it settles.
    if (typeof (result as { then?: unknown } | null)?.then === 'function') {
      return Promise.resolve(result).then(
        (value) => {
          end();
          return value;
        },
        (error: unknown) => {
          end(error);
          throw error;
        },
      ) as T;
    }
    end();
    return result;
  });
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

function originSpanContext(origin: unknown): SpanContext {
  const { traceId, spanId, traceFlags } = (origin ?? {}) as Record<string, unknown>;
  const spanContext: SpanContext = {
    // Not String(): a parsed object such as {"toString":1} would throw a TypeError.
    traceId: typeof traceId === 'string' ? traceId : '',
    spanId: typeof spanId === 'string' ? spanId : '',
    traceFlags: typeof traceFlags === 'number' ? traceFlags & TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  };
  if (!TRACE_ID.test(spanContext.traceId) || !SPAN_ID.test(spanContext.spanId) || !isSpanContextValid(spanContext)) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', 'Snapshot origin is not a valid span context (32 and 16 lowercase hex digits)');
  }
  return spanContext;
}
