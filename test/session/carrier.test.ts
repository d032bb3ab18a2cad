import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SESSION_CARRIER_FIELD,
  contextWithSession,
  createSession,
  extractSession,
  getSession,
  injectSession,
  names,
  withSession,
  type Carrier,
} from '../../src/session/index.js';
import { expectThreadlineError, throwsOnlyThreadlineError } from '../helpers/errors.js';
import { sessionContextWithForeign } from '../helpers/baggage.js';
import { baggageRecord } from '../helpers/propagation.js';
import { FULL_SESSION, sessionInput } from '../helpers/sessions.js';

const PARENT = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 };

/** A context in FULL_SESSION under the remote PARENT span. */
function sendingContext() {
  return trace.setSpan(contextWithSession(ROOT_CONTEXT, FULL_SESSION), trace.wrapSpanContext(PARENT));
}

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('injectSession / extractSession', () => {
  it('writes plain string fields that survive structured cloning and JSON', () => {
    const carrier = injectSession({}, sendingContext());
    expect(Object.keys(carrier).sort()).toEqual(['baggage', SESSION_CARRIER_FIELD, 'traceparent'].sort());
    for (const value of Object.values(carrier)) expect(typeof value).toBe('string');
    expect(carrier['traceparent']).toBe(`00-${PARENT.traceId}-${PARENT.spanId}-01`);
    expect(structuredClone(carrier)).toEqual(JSON.parse(JSON.stringify(carrier)));
  });

  it('restores the session and the remote parent (pitfall: Context lost across threads)', () => {
    const carrier: Carrier = JSON.parse(JSON.stringify(injectSession({}, sendingContext())));
    const restored = extractSession(carrier);
    expect(getSession(restored)).toEqual(createSession(FULL_SESSION));
    expect(trace.getSpanContext(restored)).toMatchObject({ ...PARENT, isRemote: true });
    const baggage = baggageRecord(restored);
    expect(baggage[names.CHAT_ID]).toBe(FULL_SESSION.chatId);
    expect(baggage[names.CHAT_THREAD_ID]).toBe(FULL_SESSION.threadId);
  });

  it('keeps foreign baggage across a trusted carrier', () => {
    const ctx = sessionContextWithForeign({ 'tenant.id': 'acme' });
    const back = extractSession(injectSession({}, ctx));
    expect(baggageRecord(back)['tenant.id']).toBe('acme');
    expect(getSession(back)?.chatId).toBe(FULL_SESSION.chatId);
  });

  it('injects the active context by default', () => {
    const carrier = context.with(sendingContext(), () => injectSession());
    expect(getSession(extractSession(carrier))!.chatId).toBe(FULL_SESSION.chatId);
  });

  it('adds to the carrier it is given', () => {
    const carrier = injectSession({ 'x-job': 'nightly' }, sendingContext());
    expect(carrier['x-job']).toBe('nightly');
  });

  it('restores from the root, whatever session is active where it is extracted', () => {
    const carrier = injectSession({}, sendingContext());
    const restored = withSession(sessionInput({ chatId: 'receiver', threadId: '9' }), () => extractSession(carrier));
    expect(getSession(restored)!.chatId).toBe(FULL_SESSION.chatId);
    expect(getSession(restored)!.threadId).toBe(FULL_SESSION.threadId);
  });

  it('without a session carries none, and baggage in it cannot set one', () => {
    const carrier = injectSession({}, trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext(PARENT)));
    expect(carrier).not.toHaveProperty(SESSION_CARRIER_FIELD);
    const spoofed = extractSession({ ...carrier, baggage: 'chat.id=evil,session.id=evil' });
    expect(getSession(spoofed)).toBeUndefined();
    expect(baggageRecord(spoofed)).not.toHaveProperty(names.CHAT_ID);
    expect(trace.getSpanContext(spoofed)?.traceId).toBe(PARENT.traceId);
  });
});

describe('extractSession with a damaged session field', () => {
  const base = injectSession({}, sendingContext());

  it.each([
    ['not base64url JSON', '!!not base64!!'],
    ['base64url of text', Buffer.from('telegram:-100').toString('base64url')],
    ['truncated', base[SESSION_CARRIER_FIELD]!.slice(0, 20)],
  ])('%s: TL_SNAPSHOT_INVALID', (_name, field) => {
    expectThreadlineError(() => extractSession({ ...base, [SESSION_CARRIER_FIELD]: field }), 'TL_SNAPSHOT_INVALID');
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an empty chat id', { ...FULL_SESSION, chatId: '' }],
    ['an unknown field', { ...FULL_SESSION, threadID: '42' }],
    ['a control character', { ...FULL_SESSION, chatId: 'a\u2028b' }],
  ])('%s: TL_SESSION_INVALID', (_name, session) => {
    expectThreadlineError(() => extractSession({ ...base, [SESSION_CARRIER_FIELD]: encode(session) }), 'TL_SESSION_INVALID');
  });

  it('a field that is not a string: TL_SNAPSHOT_INVALID', () => {
    const carrier = { ...base, [SESSION_CARRIER_FIELD]: 42 } as unknown as Carrier;
    expectThreadlineError(() => extractSession(carrier), 'TL_SNAPSHOT_INVALID');
  });

  it('throws only ThreadlineErrors for arbitrary field contents', () => {
    const fieldArb = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.jsonValue().map(encode),
      fc.dictionary(fc.constantFrom('platform', 'chatType', 'chatId', 'threadId', 'sessionId', 'threadID'), fc.jsonValue()).map((changes) =>
        encode({ ...FULL_SESSION, ...changes }),
      ),
    );
    fc.assert(
      fc.property(fieldArb, (field) => {
        throwsOnlyThreadlineError(() => extractSession({ ...base, [SESSION_CARRIER_FIELD]: field }), [
          'TL_SNAPSHOT_INVALID',
          'TL_SESSION_INVALID',
        ]);
      }),
      { numRuns: 500 },
    );
  });
});
