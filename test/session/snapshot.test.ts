import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, createContextKey, propagation, trace } from '@opentelemetry/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  captureRouting,
  contextWithSession,
  createSession,
  getSession,
  names,
  resumeRouting,
  runResumed,
  withSession,
  type RoutingSnapshot,
} from '../../src/session/index.js';
import { ORIGIN_LINK_ATTRIBUTE } from '../../src/session/snapshot.js';
import { idArb } from '../helpers/arbitraries.js';
import { expectThreadlineError, rejectionOf, thrownBy, throwsOnlyThreadlineError } from '../helpers/errors.js';
import { baggageRecord } from '../helpers/propagation.js';
import { FULL_SESSION, MINIMAL_SESSION, sessionInput, withChanges } from '../helpers/sessions.js';
import { useGlobalTracing } from '../helpers/tracing.js';

const tracing = useGlobalTracing();
const OTHER_KEY = createContextKey('test.other');

/** A snapshot captured inside FULL_SESSION and an active span, then sent through JSON. */
function capturedSnapshot(): { snapshot: unknown; originTraceId: string; originSpanId: string } {
  return withSession(FULL_SESSION, () =>
    tracing.tracer.startActiveSpan('message', (span) => {
      const snapshot: unknown = JSON.parse(JSON.stringify(captureRouting()));
      span.end();
      return { snapshot, originTraceId: span.spanContext().traceId, originSpanId: span.spanContext().spanId };
    }),
  );
}

/** A valid snapshot with `changes` merged in (undefined removes a member). */
function snapshotWith(changes: Record<string, unknown>): unknown {
  return withChanges(capturedSnapshot().snapshot as object, changes);
}

describe('captureRouting', () => {
  it('throws TL_SESSION_MISSING outside a session', () => {
    expectThreadlineError(() => captureRouting(), 'TL_SESSION_MISSING');
  });

  it('captures the session, and no origin without a span', () => {
    const snapshot = withSession(FULL_SESSION, () => captureRouting());
    expect(snapshot).toEqual({ v: 1, session: { ...createSession(FULL_SESSION) } });
  });

  it('captures the active span as the origin', () => {
    const { snapshot, originTraceId, originSpanId } = capturedSnapshot();
    expect((snapshot as RoutingSnapshot).origin).toEqual({ traceId: originTraceId, spanId: originSpanId, traceFlags: TraceFlags.SAMPLED });
  });

  it('captures an explicit context rather than the active one', () => {
    const other = contextWithSession(ROOT_CONTEXT, sessionInput({ chatId: 'explicit' }));
    const snapshot = withSession(FULL_SESSION, () => captureRouting(other));
    expect(snapshot.session.chatId).toBe('explicit');
  });

  it('is plain JSON', () => {
    const snapshot = withSession(FULL_SESSION, () => captureRouting());
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot);
  });
});

describe('resumeRouting', () => {
  it('gives the same session after JSON', () => {
    const { snapshot } = capturedSnapshot();
    const resumed = resumeRouting(snapshot);
    expect(getSession(resumed.context)).toEqual(createSession(FULL_SESSION));
    expect(Object.isFrozen(getSession(resumed.context))).toBe(true);
  });

  it('builds from the root: nothing of the resuming context leaks in', () => {
    const { snapshot } = capturedSnapshot();
    const resumerSession = sessionInput({ chatId: 'resumer', threadId: '7' });
    const busy = propagation.setBaggage(
      contextWithSession(ROOT_CONTEXT, resumerSession).setValue(OTHER_KEY, 'resumer'),
      propagation.getBaggage(contextWithSession(ROOT_CONTEXT, resumerSession))!.setEntry('tenant', { value: 'acme' }),
    );
    const resumed = tracing.tracer.startActiveSpan('resumer', {}, busy, (span) => {
      span.end();
      return resumeRouting(snapshot);
    });
    const session = getSession(resumed.context)!;
    expect(session.chatId).toBe(FULL_SESSION.chatId);
    expect(session.threadId).toBe(FULL_SESSION.threadId);
    expect(resumed.context.getValue(OTHER_KEY)).toBeUndefined();
    expect(trace.getSpan(resumed.context)).toBeUndefined();
    const baggage = baggageRecord(resumed.context);
    expect(baggage).not.toHaveProperty('tenant');
    expect(baggage[names.CHAT_ID]).toBe(FULL_SESSION.chatId);
    expect(baggage[names.CHAT_THREAD_ID]).toBe(FULL_SESSION.threadId);
  });

  it('links to the origin span', () => {
    const { snapshot, originTraceId, originSpanId } = capturedSnapshot();
    const { links } = resumeRouting(snapshot);
    expect(links).toHaveLength(1);
    expect(links[0]!.context).toMatchObject({ traceId: originTraceId, spanId: originSpanId, isRemote: true, traceFlags: TraceFlags.SAMPLED });
    expect(links[0]!.attributes).toEqual({ [ORIGIN_LINK_ATTRIBUTE]: 'origin' });
  });

  it('has no links without an origin', () => {
    expect(resumeRouting(snapshotWith({ origin: undefined })).links).toEqual([]);
  });

  it('keeps only the sampled bit of the origin trace flags', () => {
    const { snapshot } = capturedSnapshot();
    const origin = { ...(snapshot as RoutingSnapshot).origin!, traceFlags: 0xff };
    expect(resumeRouting({ ...(snapshot as object), origin }).links[0]!.context.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(resumeRouting({ ...(snapshot as object), origin: { ...origin, traceFlags: '1' } }).links[0]!.context.traceFlags).toBe(
      TraceFlags.NONE,
    );
  });
});

describe('resumeRouting refuses invalid snapshots', () => {
  const origin = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a number', 1],
    ['a string', '{"v":1}'],
    ['an array', [1]],
    ['an empty object', {}],
    ['version 2', { v: 2, session: FULL_SESSION }],
    ['version "1"', { v: '1', session: FULL_SESSION }],
  ])('%s: TL_SNAPSHOT_INVALID', (_name, snapshot) => {
    expectThreadlineError(() => resumeRouting(snapshot), 'TL_SNAPSHOT_INVALID');
  });

  it.each([
    ['no session', { session: undefined }],
    ['a null session', { session: null }],
    ['a string session', { session: 'telegram:1' }],
    ['an empty chat id', { session: { ...FULL_SESSION, chatId: '' } }],
    ['a numeric chat id', { session: { ...FULL_SESSION, chatId: 1001234 } }],
    ['an unknown field', { session: { ...FULL_SESSION, threadID: '42' } }],
    ['a control character', { session: { ...FULL_SESSION, threadId: '4\n2' } }],
    ['a bad chat type', { session: { ...FULL_SESSION, chatType: 'supergroup' } }],
  ])('%s: TL_SESSION_INVALID', (_name, changes) => {
    expectThreadlineError(() => resumeRouting(snapshotWith(changes)), 'TL_SESSION_INVALID');
  });

  it.each([
    ['null', null],
    ['a string', 'b7ad6b7169203331'],
    ['a bad trace id', { ...origin, traceId: 'not-hex' }],
    ['an uppercase trace id', { ...origin, traceId: origin.traceId.toUpperCase() }],
    ['an all-zero trace id', { ...origin, traceId: '0'.repeat(32) }],
    ['an all-zero span id', { ...origin, spanId: '0'.repeat(16) }],
    ['a short span id', { ...origin, spanId: 'b7ad6b71' }],
    ['a numeric trace id', { ...origin, traceId: 1234 }],
    ['an object trace id that cannot become a string', JSON.parse('{"traceId":{"toString":1,"valueOf":1},"spanId":"b7ad6b7169203331"}')],
  ])('an origin that is %s: TL_SNAPSHOT_INVALID', (_name, badOrigin) => {
    expectThreadlineError(() => resumeRouting(snapshotWith({ origin: badOrigin })), 'TL_SNAPSHOT_INVALID');
  });

  it('throws only ThreadlineErrors for arbitrary values', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true }), (value) => {
        throwsOnlyThreadlineError(() => resumeRouting(value), ['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
      }),
      { numRuns: 500 },
    );
  });

  it('throws only ThreadlineErrors for damaged snapshots, and resumes the ones that validate', () => {
    const { snapshot } = capturedSnapshot();
    const valid = snapshot as Record<string, unknown>;
    const damagedSession = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fc.constantFrom('platform', 'chatId', 'chatType', 'threadId', 'sessionId', 'threadID', 'toString'), fc.jsonValue()).map(
        (changes) => ({ ...(valid['session'] as object), ...changes }),
      ),
      fc.record({ platform: fc.constant('telegram'), chatType: fc.constant('dm'), chatId: idArb, threadId: idArb }),
    );
    const damagedOrigin = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fc.constantFrom('traceId', 'spanId', 'traceFlags', 'toString', 'valueOf'), fc.jsonValue()).map((changes) => ({
        ...(valid['origin'] as object),
        ...changes,
      })),
    );
    fc.assert(
      fc.property(fc.record({ v: fc.oneof(fc.constant(1), fc.jsonValue()), session: damagedSession, origin: damagedOrigin }, { requiredKeys: [] }), (candidate) => {
        const text = JSON.stringify(candidate);
        let resumed: ReturnType<typeof resumeRouting> | undefined;
        const threw = throwsOnlyThreadlineError(() => {
          resumed = resumeRouting(JSON.parse(text));
        }, ['TL_SNAPSHOT_INVALID', 'TL_SESSION_INVALID']);
        if (!threw) expect(getSession(resumed!.context)).toBeDefined();
      }),
      { numRuns: 1000 },
    );
  });
});

describe('runResumed', () => {
  it('runs a sync fn in a new root span that links to the origin, and ends it', () => {
    const { snapshot, originTraceId, originSpanId } = capturedSnapshot();
    const inside = withSession(sessionInput({ chatId: 'caller' }), () =>
      tracing.tracer.startActiveSpan('caller', (caller) => {
        const result = runResumed(snapshot, 'notify', () => ({
          session: getSession(),
          span: trace.getActiveSpan()?.spanContext(),
          callerTrace: caller.spanContext().traceId,
        }));
        caller.end();
        return result;
      }),
    );
    expect(inside.session).toEqual(createSession(FULL_SESSION));
    const span = tracing.span('notify');
    expect(inside.span?.spanId).toBe(span.spanContext().spanId);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.spanContext().traceId).not.toBe(inside.callerTrace);
    expect(span.spanContext().traceId).not.toBe(originTraceId);
    expect(span.links).toHaveLength(1);
    expect(span.links[0]!.context).toMatchObject({ traceId: originTraceId, spanId: originSpanId });
    expect(span.links[0]!.attributes).toEqual({ [ORIGIN_LINK_ATTRIBUTE]: 'origin' });
    expect(span.kind).toBe(SpanKind.INTERNAL);
  });

  it('ends the span only when an async fn settles, and returns its value', async () => {
    const { snapshot } = capturedSnapshot();
    let release!: (value: string) => void;
    const result = runResumed(snapshot, 'async-job', () => new Promise<string>((resolve) => (release = resolve)));
    expect(result).toBeInstanceOf(Promise);
    expect(tracing.spans().filter((span) => span.name === 'async-job')).toEqual([]);
    release('done');
    await expect(result).resolves.toBe('done');
    expect(tracing.span('async-job').ended).toBe(true);
  });

  it('keeps the session across awaits inside the resumed work', async () => {
    const { snapshot } = capturedSnapshot();
    const seen = await runResumed(snapshot, 'awaiting', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return getSession()?.threadId;
    });
    expect(seen).toBe(FULL_SESSION.threadId);
  });

  it('ends the span and rethrows when a sync fn throws', () => {
    const { snapshot } = capturedSnapshot();
    const failure = new Error('sync failure');
    expect(
      thrownBy(() =>
        runResumed(snapshot, 'throws', () => {
          throw failure;
        }),
      ),
    ).toBe(failure);
    expect(tracing.span('throws').ended).toBe(true);
  });

  it('ends the span and rejects when an async fn rejects', async () => {
    const { snapshot } = capturedSnapshot();
    const failure = new Error('async failure');
    const error = await rejectionOf(
      runResumed(snapshot, 'rejects', async () => {
        await Promise.resolve();
        throw failure;
      }),
    );
    expect(error).toBe(failure);
    expect(tracing.span('rejects').ended).toBe(true);
    expect(tracing.span('rejects').status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'async failure' });
  });

  it('keeps the span open until a thenable that is not a Promise settles', async () => {
    const { snapshot } = capturedSnapshot();
    let settle!: (value: string) => void;
    const thenable = { then: (resolve: (value: string) => void) => void (settle = resolve) };
    const result = runResumed(snapshot, 'thenable', () => thenable) as unknown as Promise<string>;
    await new Promise((resolve) => setImmediate(resolve));
    expect(tracing.spans().filter((span) => span.name === 'thenable')).toEqual([]);
    settle('settled');
    await expect(result).resolves.toBe('settled');
    expect(tracing.span('thenable').ended).toBe(true);
  });

  it('refuses an invalid snapshot before running fn or starting a span', () => {
    let ran = false;
    expectThreadlineError(
      () =>
        runResumed({ v: 1, session: { ...MINIMAL_SESSION, chatId: '' } }, 'never', () => {
          ran = true;
        }),
      'TL_SESSION_INVALID',
    );
    expect(ran).toBe(false);
    expect(tracing.spans()).toEqual([]);
  });

  it('leaves the caller context as it was', () => {
    const { snapshot } = capturedSnapshot();
    withSession(sessionInput({ chatId: 'caller' }), () => {
      runResumed(snapshot, 'inner', () => undefined);
      expect(getSession()!.chatId).toBe('caller');
      expect(context.active().getValue(OTHER_KEY)).toBeUndefined();
    });
  });
});
