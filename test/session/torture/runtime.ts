// The session runtimes the torture suite runs against: threadline's real one, and a naive one
// that keeps "the current session" in a module-level variable, as the broken Python gateway
// kept it in process-wide env vars (pitfall: Process-wide routing). Every case runs over both: the real one must
// isolate every session, the naive one must be caught failing, which proves the case can fail.
import { context, trace, type Link, type SpanContext, type Span as ApiSpan } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  SESSION_ENV,
  bindToSession,
  captureRouting,
  childProcessEnv,
  extractSession,
  getSession,
  injectSession,
  names,
  outboundHeaders,
  runDetached,
  runResumed,
  withSession,
  type Carrier,
  type Session,
  type SessionEnvName,
} from '../../../src/session/index.js';
import { SessionSpanProcessor } from '../../../src/telemetry/session-span-processor.js';

export interface SessionRuntime {
  readonly name: 'real' | 'naive';
  /** Whether the runtime claims to isolate sessions: decides what expectIsolation demands. */
  readonly isolates: boolean;
  run<T>(session: Session, fn: () => T): T;
  current(): Session | undefined;
  /** Makes `fn` run in the session active where bind was called (pitfall: Callbacks in their creator's context). */
  bind<F extends (...args: never[]) => unknown>(fn: F): F;
  /** Runs `fn` outside any session: how handlers and long-lived loops are started (pitfalls: Inherited routing; Long-lived loops holding a request's context). */
  detached<T>(fn: () => T): T;
  /** The environment for a child process of the current session. */
  childEnv(): NodeJS.ProcessEnv;
  /** Headers for an outbound HTTP call, carrying the session as W3C baggage. */
  outboundHeaders(url: string): Record<string, string>;
  /** Writes the current session into a carrier for another thread. */
  inject(carrier?: Carrier): Carrier;
  /** Runs `fn` in the session a carrier holds. */
  extract<T>(carrier: Readonly<Carrier>, fn: () => T): T;
  /** The current routing as a JSON-safe snapshot. */
  capture(): unknown;
  /** Runs `fn` in a snapshot's routing inside a new root span `spanName` linked to the origin (global tracer). */
  resume<T>(snapshot: unknown, spanName: string, fn: () => T): T;
  /** The span processor that stamps routing onto spans. */
  spanProcessor(): SpanProcessor;
}

export const realRuntime: SessionRuntime = {
  name: 'real',
  isolates: true,
  run: (session, fn) => withSession(session, fn),
  current: () => getSession(),
  bind: (fn) => bindToSession(fn),
  detached: (fn) => runDetached(fn),
  childEnv: () => childProcessEnv(),
  outboundHeaders: (url) => outboundHeaders(url),
  inject: (carrier) => injectSession(carrier),
  extract: (carrier, fn) => context.with(extractSession(carrier), fn),
  capture: () => captureRouting(),
  resume: (snapshot, spanName, fn) => runResumed(snapshot, spanName, fn),
  spanProcessor: () => new SessionSpanProcessor(),
};

// ---- naive: one process-wide "current session", set on entry and restored when the handler settles.

let current: Session | undefined;

function naiveRun<T>(session: Session | undefined, fn: () => T): T {
  const previous = current;
  current = session;
  let result: T;
  try {
    result = fn();
  } catch (error) {
    current = previous;
    throw error;
  }
  if (result instanceof Promise) {
    return result.finally(() => {
      current = previous;
    }) as T;
  }
  current = previous;
  return result;
}

/** The variables a child needs, from the current session, over a copy of this process's env. */
function naiveChildEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (current === undefined) return env;
  for (const [name, field] of Object.entries(SESSION_ENV) as [SessionEnvName, keyof Session][]) {
    const value = current[field];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function naiveBaggage(session: Session): string {
  const entries: [string, string | undefined][] = [
    [names.CHAT_PLATFORM, session.platform],
    [names.CHAT_ID, session.chatId],
    [names.CHAT_THREAD_ID, session.threadId],
    [names.SESSION_ID, session.sessionId],
  ];
  return entries
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`)
    .join(',');
}

/** Stamps the routing of the global current session, as naive code would, ignoring parentContext. */
class NaiveSpanProcessor implements SpanProcessor {
  onStart(span: Span): void {
    const session = current;
    if (session === undefined) return;
    span.setAttribute(names.CHAT_PLATFORM, session.platform);
    span.setAttribute(names.CHAT_TYPE, session.chatType);
    span.setAttribute(names.CHAT_ID, session.chatId);
    if (session.threadId !== undefined) span.setAttribute(names.CHAT_THREAD_ID, session.threadId);
    span.setAttribute(names.SESSION_ID, session.sessionId);
    span.setAttribute(names.GEN_AI_CONVERSATION_ID, session.sessionId);
  }
  onEnd(_span: ReadableSpan): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

interface NaiveSnapshot {
  readonly session: Session | null;
  readonly origin?: SpanContext;
}

function endWhenSettled<T>(span: ApiSpan, result: T): T {
  if (result instanceof Promise) return result.finally(() => span.end()) as T;
  span.end();
  return result;
}

const NAIVE_CARRIER_FIELD = 'session';

export const naiveRuntime: SessionRuntime = {
  name: 'naive',
  isolates: false,
  run: (session, fn) => naiveRun(session, fn),
  current: () => current,
  bind: (fn) => {
    const captured = current;
    return ((...args: Parameters<typeof fn>) => naiveRun(captured, () => fn(...args))) as typeof fn;
  },
  detached: (fn) => naiveRun(undefined, fn),
  childEnv: naiveChildEnv,
  outboundHeaders: (_url) => (current === undefined ? {} : { baggage: naiveBaggage(current) }),
  inject: (carrier = {}) => {
    carrier[NAIVE_CARRIER_FIELD] = JSON.stringify(current ?? null);
    return carrier;
  },
  extract: (carrier, fn) => naiveRun((JSON.parse(carrier[NAIVE_CARRIER_FIELD] ?? 'null') as Session | null) ?? undefined, fn),
  capture: (): NaiveSnapshot => {
    // Tracing itself still uses the OTel context; only the routing is process-wide.
    const origin = trace.getActiveSpan()?.spanContext();
    return origin === undefined ? { session: current ?? null } : { session: current ?? null, origin };
  },
  resume: (snapshot, spanName, fn) => {
    const { session, origin } = snapshot as NaiveSnapshot;
    const links: Link[] = origin === undefined ? [] : [{ context: origin }];
    return naiveRun(session ?? undefined, () =>
      trace.getTracer('threadline').startActiveSpan(spanName, { links, root: true }, (span) => endWhenSettled(span, fn())),
    );
  },
  spanProcessor: () => new NaiveSpanProcessor(),
};

export const runtimes: readonly SessionRuntime[] = [realRuntime, naiveRuntime];

export function runtimeNamed(name: string): SessionRuntime {
  const runtime = runtimes.find((candidate) => candidate.name === name);
  if (runtime === undefined) throw new Error(`no session runtime named ${name}`);
  return runtime;
}
