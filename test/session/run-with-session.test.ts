import { setImmediate as tick } from 'node:timers/promises';
import { EventEmitter } from 'node:events';
import { ROOT_CONTEXT, context, createContextKey, propagation, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  bindToSession,
  contextWithSession,
  createSession,
  getSession,
  names,
  requireSession,
  runDetached,
  withSession,
} from '../../src/session/index.js';
import { expectThreadlineError, thrownBy } from '../helpers/errors.js';
import { baggageRecord } from '../helpers/propagation.js';
import { FULL_SESSION, MINIMAL_SESSION, routingRecord, sessionInput } from '../helpers/sessions.js';

const SESSION_BAGGAGE_KEYS = [names.CHAT_PLATFORM, names.CHAT_TYPE, names.CHAT_ID, names.CHAT_THREAD_ID, names.USER_ID, names.SESSION_ID];

describe('getSession / requireSession', () => {
  it('give nothing outside a session', () => {
    expect(getSession()).toBeUndefined();
    expect(getSession(ROOT_CONTEXT)).toBeUndefined();
    const error = expectThreadlineError(() => requireSession(), 'TL_SESSION_MISSING');
    expect(error.statusCode).toBe(500);
  });

  it('give the validated session inside one', () => {
    withSession(FULL_SESSION, () => {
      const session = getSession();
      expect(session).toEqual(createSession(FULL_SESSION));
      expect(Object.isFrozen(session)).toBe(true);
      expect(requireSession()).toBe(session);
    });
  });
});

describe('withSession', () => {
  it('returns what fn returns and leaves no session behind', async () => {
    expect(withSession(MINIMAL_SESSION, () => 7)).toBe(7);
    await expect(withSession(MINIMAL_SESSION, async () => 8)).resolves.toBe(8);
    expect(getSession()).toBeUndefined();
  });

  it('keeps the session across awaits, timers and macrotasks', async () => {
    const expected = createSession(FULL_SESSION).sessionId;
    const seen = await withSession(FULL_SESSION, async () => {
      const ids: (string | undefined)[] = [];
      await tick();
      ids.push(getSession()?.sessionId);
      await new Promise<void>((resolve) => setTimeout(resolve, 1));
      ids.push(getSession()?.sessionId);
      ids.push(await new Promise<string | undefined>((resolve) => setImmediate(() => resolve(getSession()?.sessionId))));
      return ids;
    });
    expect(seen).toEqual([expected, expected, expected]);
  });

  it('keeps two interleaved sessions apart (pitfall: Process-wide routing)', async () => {
    const run = (chatId: string) =>
      withSession(sessionInput({ chatId }), async () => {
        const seen: string[] = [];
        for (let i = 0; i < 5; i++) {
          await tick();
          seen.push(getSession()!.chatId);
        }
        return seen;
      });
    const [a, b] = await Promise.all([run('chat-a'), run('chat-b')]);
    expect(a).toEqual(Array(5).fill('chat-a'));
    expect(b).toEqual(Array(5).fill('chat-b'));
  });

  it('validates before running fn', () => {
    let ran = false;
    const error = thrownBy(() =>
      withSession(sessionInput({ threadID: '42' }), () => {
        ran = true;
      }),
    );
    expect((error as { field?: string }).field).toBe('threadID');
    expect(ran).toBe(false);
  });

  it('accepts a session that was validated already', () => {
    const session = createSession(FULL_SESSION);
    expect(withSession(session, () => getSession())).toBe(session);
  });
});

describe('nested sessions replace the whole routing', () => {
  const parent = FULL_SESSION; // with thread and user
  const child = sessionInput({ chatId: 'other-chat', threadId: undefined, userId: undefined, chatName: undefined });

  it('in the context value: the child does not inherit the parent thread or user', () => {
    withSession(parent, () => {
      withSession(child, () => {
        const session = getSession()!;
        expect(session.chatId).toBe('other-chat');
        expect(session.threadId).toBeUndefined();
        expect(session.userId).toBeUndefined();
        expect(session.chatName).toBeUndefined();
        expect(session.sessionId).toBe(createSession(child).sessionId);
      });
      expect(getSession()!.threadId).toBe(FULL_SESSION.threadId);
    });
  });

  it('in baggage: the parent thread and user entries are gone', () => {
    withSession(parent, () => {
      expect(baggageRecord(context.active())[names.CHAT_THREAD_ID]).toBe(FULL_SESSION.threadId);
      withSession(child, () => {
        const baggage = baggageRecord(context.active());
        expect(baggage).not.toHaveProperty(names.CHAT_THREAD_ID);
        expect(baggage).not.toHaveProperty(names.USER_ID);
        expect(baggage[names.CHAT_ID]).toBe('other-chat');
        expect(baggage[names.SESSION_ID]).toBe(getSession()!.sessionId);
      });
    });
  });

  it('keeps the parent context foreign baggage entries, drops its threadline ones in any case', () => {
    const parentContext = propagation.setBaggage(
      ROOT_CONTEXT,
      propagation.createBaggage({
        tenant: { value: 'acme' },
        'CHAT.ID': { value: 'spoofed' },
        'chat.thread.id': { value: 'stale-thread' },
        'Session.Id': { value: 'spoofed' },
      }),
    );
    const baggage = baggageRecord(contextWithSession(parentContext, MINIMAL_SESSION));
    expect(baggage).toEqual({ tenant: 'acme', ...routingRecord(createSession(MINIMAL_SESSION)) });
  });

  it('keeps foreign entries added between two sessions', () => {
    withSession(parent, () => {
      const withTenant = propagation.setBaggage(
        context.active(),
        propagation.getBaggage(context.active())!.setEntry('tenant', { value: 'acme' }),
      );
      const baggage = baggageRecord(contextWithSession(withTenant, child));
      expect(baggage['tenant']).toBe('acme');
      expect(baggage).not.toHaveProperty(names.CHAT_THREAD_ID);
    });
  });

  it('does not change the parent context', () => {
    const parentContext = contextWithSession(ROOT_CONTEXT, parent);
    contextWithSession(parentContext, child);
    expect(getSession(parentContext)!.chatId).toBe(FULL_SESSION.chatId);
    expect(baggageRecord(parentContext)[names.CHAT_THREAD_ID]).toBe(FULL_SESSION.threadId);
  });
});

describe('session baggage', () => {
  it('holds exactly the routing entries, never names or the reply anchor', () => {
    const ctx = contextWithSession(ROOT_CONTEXT, FULL_SESSION);
    const session = getSession(ctx)!;
    const baggage = baggageRecord(ctx);
    expect(Object.keys(baggage).sort()).toEqual([...SESSION_BAGGAGE_KEYS].sort());
    expect(baggage).toEqual(routingRecord(session));
    const values = Object.values(baggage);
    expect(values).not.toContain(FULL_SESSION.chatName);
    expect(values).not.toContain(FULL_SESSION.userName);
    expect(values).not.toContain(FULL_SESSION.messageId);
  });

  it('is not where routing is read from', () => {
    const spoofed = propagation.setBaggage(ROOT_CONTEXT, propagation.createBaggage({ [names.CHAT_ID]: { value: 'x' } }));
    expect(getSession(spoofed)).toBeUndefined();
  });
});

describe('runDetached', () => {
  const KEY = createContextKey('test.marker');

  it("runs with no session, baggage, span or other value (pitfalls: Inherited routing; Long-lived loops holding a request's context)", async () => {
    const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
    const busy = trace.setSpan(contextWithSession(ROOT_CONTEXT, FULL_SESSION).setValue(KEY, 1), span);
    const seen = await context.with(busy, () =>
      runDetached(async () => {
        const now = [getSession(), propagation.getBaggage(context.active()), trace.getSpan(context.active()), context.active().getValue(KEY)];
        await tick();
        const later = await new Promise<unknown>((resolve) => setTimeout(() => resolve(getSession()), 1));
        return [...now, later];
      }),
    );
    expect(seen).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('returns what fn returns and restores the session afterwards', () => {
    withSession(FULL_SESSION, () => {
      expect(runDetached(() => 'done')).toBe('done');
      expect(getSession()!.chatId).toBe(FULL_SESSION.chatId);
    });
  });
});

describe('bindToSession', () => {
  it("runs a callback in the session it was bound in, whoever calls it (pitfall: Callbacks in their creator's context)", () => {
    const emitter = new EventEmitter();
    const seen: (string | undefined)[] = [];
    withSession(sessionInput({ chatId: 'binder' }), () => {
      emitter.on('event', bindToSession(() => seen.push(getSession()?.chatId)));
    });
    withSession(sessionInput({ chatId: 'emitter' }), () => emitter.emit('event'));
    emitter.emit('event');
    expect(seen).toEqual(['binder', 'binder']);
  });

  it('passes arguments and the return value through', () => {
    const add = withSession(MINIMAL_SESSION, () => bindToSession((a: number, b: number) => a + b));
    expect(add(2, 3)).toBe(5);
  });
});
