import { ROOT_CONTEXT, context, propagation, type Context } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';
import { isSessionNamespaceKey } from './names.js';
import { SESSION_KEY } from './context-keys.js';
import { sessionBaggageEntries } from './baggage-entries.js';
import type { Session, SessionInput } from './session.js';
import { createSession } from './validate-session.js';
import { activeContext } from './active-context.js';
import { noContextManager } from './assert-context-propagation.js';

/**
 * Returns `parent` with the session set as a context value and as baggage. The whole
 * routing is replaced: every threadline baggage entry of the parent is removed first, so a
 * nested session never mixes the parent's thread with the child's chat.
 */
export function contextWithSession(parent: Context, input: SessionInput): Context {
  const session = createSession(input);
  const entries = sessionBaggageEntries(session);
  const inherited = propagation.getBaggage(parent);
  if (inherited !== undefined) {
    for (const [key, entry] of inherited.getAllEntries()) {
      if (!isSessionNamespaceKey(key)) entries[key] = entry;
    }
  }
  return propagation.setBaggage(parent.setValue(SESSION_KEY, session), propagation.createBaggage(entries));
}

/**
 * Runs `fn` in a new context holding the session; returns what `fn` returns. Throws
 * TL_NO_CONTEXT_MANAGER where none is registered: context.with() would silently do nothing.
 */
export function withSession<T>(input: SessionInput, fn: () => T): T {
  const ctx = contextWithSession(activeContext(), input);
  return context.with(ctx, () => {
    if (context.active() !== ctx) throw noContextManager();
    return fn();
  });
}

/**
 * The last context read and its session. Contexts are immutable, so a repeated read in the
 * same context (the log lines and calls of one step) is answered without the Map lookup of
 * getValue; a read in another context costs one comparison more. Holds one context alive
 * until the next read. Fields of one object: measured cheaper to write than module `let`s.
 */
const lastRead: { context: Context | undefined; session: Session | undefined } = { context: undefined, session: undefined };

/** The session of `ctx` (default: the active context), or undefined outside any session. */
export function getSession(ctx: Context = activeContext()): Session | undefined {
  if (ctx !== lastRead.context) {
    lastRead.session = ctx.getValue(SESSION_KEY) as Session | undefined;
    lastRead.context = ctx;
  }
  return lastRead.session;
}

/** Like getSession, but throws TL_SESSION_MISSING where no session is active. */
export function requireSession(ctx: Context = activeContext()): Session {
  const session = getSession(ctx);
  if (session === undefined) {
    throw new ThreadlineError(
      'TL_SESSION_MISSING',
      'No session is active here. Call this inside withSession(), or capture the routing with captureRouting() and resume it.',
    );
  }
  return session;
}

/**
 * Runs `fn` in the empty root context. Use it to start long-lived loops, pools and handler
 * tasks, so they never carry the routing of the message that happened to start them
 * (pitfalls: Inherited routing; Long-lived loops holding a request's context).
 */
export function runDetached<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/**
 * Binds `fn` to the active context. Use it where a callback is handed to something that
 * runs it later from another context: an EventEmitter created elsewhere, a shared queue or
 * pool (pitfall: Callbacks in their creator's context).
 */
export function bindToSession<F extends (...args: never[]) => unknown>(fn: F): F {
  return context.bind(activeContext(), fn);
}
