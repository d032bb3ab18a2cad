import { ROOT_CONTEXT, SpanKind, defaultTextMapGetter, defaultTextMapSetter, propagation, trace, type Attributes, type Context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_OUTBOUND_POLICY,
  DESTINATION_HOST_KEY,
  INBOUND_KEEP_BAGGAGE_KEY,
  MAX_BAGGAGE_BYTES,
  MAX_BAGGAGE_MEMBERS,
  createSession,
  isSessionNamespaceKey,
  names,
  type KeepBaggage,
} from '../../src/session/index.js';
import { SessionBaggagePropagator } from '../../src/telemetry/index.js';
import { hostileBaggageArb } from '../helpers/arbitraries.js';
import { DOCUMENTED_DEFAULT_KEYS as DEFAULT_KEYS, HOST_RULES as POLICY, SPOOFED_HEADER, manyForeignEntries, sessionContextWithForeign } from '../helpers/baggage.js';
import { baggageRecord, parseBaggageHeader } from '../helpers/propagation.js';
import { FULL_SESSION, routingRecord } from '../helpers/sessions.js';
import { createTestTracing } from '../helpers/tracing.js';

const session = createSession(FULL_SESSION);
const tracing = createTestTracing();
afterAll(() => tracing.provider.shutdown());

/** The baggage header `propagator` writes for `ctx`, decoded. */
function injected(propagator: SessionBaggagePropagator, ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  return parseBaggageHeader(carrier['baggage']);
}

function sortedKeys(record: Record<string, string>): string[] {
  return Object.keys(record).sort();
}

/** `ctx` with an active client span carrying `attributes`, as an http/undici instrumentation makes it. */
function withClientSpan(ctx: Context, attributes: Attributes): Context {
  const span = tracing.tracer.startSpan('GET', { kind: SpanKind.CLIENT, attributes }, ctx);
  span.end();
  return trace.setSpan(ctx, span);
}

describe('SessionBaggagePropagator.inject', () => {
  const propagator = new SessionBaggagePropagator(POLICY);

  it('writes nothing without baggage', () => {
    const carrier: Record<string, string> = {};
    propagator.inject(ROOT_CONTEXT, carrier, defaultTextMapSetter);
    expect(carrier).toEqual({});
  });

  it('writes nothing where tracing is suppressed, as the W3C propagator: no second header past the host policy', () => {
    const ctx = sessionContextWithForeign({ tenant: 'acme' });
    expect(Object.keys(injected(propagator, ctx)).length).toBeGreaterThan(0);
    expect(injected(propagator, suppressTracing(ctx))).toEqual({});
  });

  it('sends the default keys and foreign entries to an unknown host', () => {
    const sent = injected(new SessionBaggagePropagator(), sessionContextWithForeign({ tenant: 'acme' }));
    expect(sent).toEqual({ ...routingRecord(session, DEFAULT_KEYS), tenant: 'acme' });
  });

  it('sends chat.type and user.id only when configured', () => {
    const configured = new SessionBaggagePropagator({ keys: [...DEFAULT_KEYS, names.CHAT_TYPE, names.USER_ID], hosts: [] });
    expect(sortedKeys(injected(configured, sessionContextWithForeign({})))).toEqual(
      [...DEFAULT_KEYS, names.CHAT_TYPE, names.USER_ID].sort(),
    );
  });

  it('takes the host from outboundHeaders() marking', () => {
    const ctx = sessionContextWithForeign({}).setValue(DESTINATION_HOST_KEY, 'api.example.com');
    expect(sortedKeys(injected(propagator, ctx))).toEqual([names.CHAT_ID]);
  });

  it.each([
    ['server.address', { 'server.address': 'api.example.com' }, [names.CHAT_ID]],
    ['net.peer.name', { 'net.peer.name': 'api.example.com' }, [names.CHAT_ID]],
    ['url.full', { 'url.full': 'https://svc.example.com:8443/path?q=1' }, [names.SESSION_ID, names.CHAT_TYPE]],
    ['http.url', { 'http.url': 'https://svc.example.com/' }, [names.SESSION_ID, names.CHAT_TYPE]],
    ['a host with a rule that sends none', { 'server.address': 'db.internal' }, []],
    ['server.address over url.full', { 'server.address': 'api.example.com', 'url.full': 'https://svc.example.com/' }, [names.CHAT_ID]],
    ['an unparsable url.full (default keys)', { 'url.full': 'not a url' }, DEFAULT_KEYS],
    ['no address at all (default keys)', { 'http.method': 'GET' }, DEFAULT_KEYS],
  ])("takes the host from a client span's %s", (_name, attributes, keys) => {
    expect(sortedKeys(injected(propagator, withClientSpan(sessionContextWithForeign({}), attributes)))).toEqual([...keys].sort());
  });

  it('prefers the outboundHeaders() marking to the span', () => {
    const ctx = withClientSpan(sessionContextWithForeign({}), { 'server.address': 'svc.example.com' }).setValue(
      DESTINATION_HOST_KEY,
      'api.example.com',
    );
    expect(sortedKeys(injected(propagator, ctx))).toEqual([names.CHAT_ID]);
  });

  it(`keeps the header within ${MAX_BAGGAGE_MEMBERS} members and ${MAX_BAGGAGE_BYTES} bytes, session entries kept`, () => {
    for (const [count, size] of [[500, 20], [120, 300], [4, 4000]] as const) {
      const carrier: Record<string, string> = {};
      propagator.inject(sessionContextWithForeign(manyForeignEntries(count, size)), carrier, defaultTextMapSetter);
      const header = carrier['baggage']!;
      expect(Buffer.byteLength(header)).toBeLessThanOrEqual(MAX_BAGGAGE_BYTES);
      expect(header.split(',').length).toBeLessThanOrEqual(MAX_BAGGAGE_MEMBERS);
      expect(parseBaggageHeader(header)[names.CHAT_ID]).toBe(session.chatId);
    }
  });

  it('lists the baggage header as its field', () => {
    expect(propagator.fields()).toEqual(['baggage']);
  });
});

describe('SessionBaggagePropagator.extract', () => {
  function extracted(keep: KeepBaggage, header: string, ctx: Context = ROOT_CONTEXT): Context {
    return new SessionBaggagePropagator(DEFAULT_OUTBOUND_POLICY, keep).extract(ctx, { baggage: header }, defaultTextMapGetter);
  }

  it('drops threadline keys in any case and keeps foreign ones as configured', () => {
    const header = `${SPOOFED_HEADER},foo=bar,tenant=acme`;
    expect(propagation.getBaggage(extracted(false, header))).toBeUndefined();
    expect(baggageRecord(extracted(true, header))).toEqual({ foo: 'bar', tenant: 'acme' });
    expect(baggageRecord(extracted(['tenant', 'chat.id'], header))).toEqual({ tenant: 'acme' });
  });

  it("follows an inboundContext() call's choice carried in the context", () => {
    const header = `${SPOOFED_HEADER},foo=bar`;
    expect(baggageRecord(extracted(false, header, ROOT_CONTEXT.setValue(INBOUND_KEEP_BAGGAGE_KEY, true)))).toEqual({ foo: 'bar' });
    expect(propagation.getBaggage(extracted(true, header, ROOT_CONTEXT.setValue(INBOUND_KEEP_BAGGAGE_KEY, false)))).toBeUndefined();
  });

  it('returns the context unchanged without a baggage header', () => {
    const ctx = sessionContextWithForeign({});
    expect(new SessionBaggagePropagator().extract(ctx, {}, defaultTextMapGetter)).toBe(ctx);
  });

  it('keeps only bounded, foreign baggage from hostile headers (fuzz)', () => {
    fc.assert(
      fc.property(hostileBaggageArb, fc.oneof(fc.boolean(), fc.array(fc.constantFrom('foo', 'tenant', 'chat.id'))), (header, keep) => {
        const keys = Object.keys(baggageRecord(extracted(keep, header)));
        expect(keys.filter(isSessionNamespaceKey)).toEqual([]);
        expect(keys.length).toBeLessThanOrEqual(MAX_BAGGAGE_MEMBERS);
        if (keep === false) expect(keys).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

// The W3C baggage test vectors (w3c/baggage test/test_baggage.py), as tables.
describe('SessionBaggagePropagator: the W3C baggage test vectors', () => {
  const keepAll = new SessionBaggagePropagator(DEFAULT_OUTBOUND_POLICY, true);
  const parse = (header: string | string[]): Record<string, string> =>
    baggageRecord(keepAll.extract(ROOT_CONTEXT, { baggage: header }, defaultTextMapGetter));
  /** The header sent for foreign `entries` alone (no session): what an unknown host gets. */
  const sent = (entries: Record<string, string>): string => {
    let baggage = propagation.createBaggage();
    for (const [key, value] of Object.entries(entries)) baggage = baggage.setEntry(key, { value });
    const carrier: Record<string, string> = {};
    new SessionBaggagePropagator().inject(propagation.setBaggage(ROOT_CONTEXT, baggage), carrier, defaultTextMapSetter);
    return carrier['baggage'] ?? '';
  };

  it.each([
    ['test_parse_simple', 'SomeKey=SomeValue', { SomeKey: 'SomeValue' }],
    ['test_parse_multiple', 'SomeKey=SomeValue;SomeProp,SomeKey2=SomeValue2;ValueProp=PropVal', { SomeKey: 'SomeValue', SomeKey2: 'SomeValue2' }],
    [
      'test_parse_multiple_ows',
      'SomeKey \t = \t SomeValue \t ; \t SomeProp \t , \t SomeKey2 \t = \t SomeValue2 \t ; \t ValueProp \t = \t PropVal',
      { SomeKey: 'SomeValue', SomeKey2: 'SomeValue2' },
    ],
    [
      'test_parse_multiple_kv_property_ows',
      'SomeKey \t = \t SomeValue \t ; \t SomePropKey=SomePropValue \t , \t SomeKey2 \t = \t SomeValue2 \t ; \t SomePropKey2 \t = \t SomePropValue2',
      { SomeKey: 'SomeValue', SomeKey2: 'SomeValue2' },
    ],
    ['test_parse_simple_ows', 'SomeKey \t = \t SomeValue \t ', { SomeKey: 'SomeValue' }],
    ['test_parse_percent_encoded', 'SomeKey=%09%20%22%27%3B%3Dasdf%21%40%23%24%25%5E%26%2A%28%29', { SomeKey: '\t "\';=asdf!@#$%^&*()' }],
    ['test_parse_percent_encoded_ows', 'SomeKey \t = \t %09%20%22%27%3B%3Dasdf%21%40%23%24%25%5E%26%2A%28%29 \t ', { SomeKey: '\t "\';=asdf!@#$%^&*()' }],
  ])('%s', (_name, header, expected) => {
    expect(parse(header)).toEqual(expected);
  });

  it('judges the 8192-byte limit without optional whitespace', () => {
    // Four members of 2,003 bytes: 8,015 bytes without OWS, about 8,800 with it.
    const padding = ' \t'.repeat(50);
    const members = Array.from({ length: 4 }, (_, i) => `k${i}${padding}=${padding}${'x'.repeat(2000)}`);
    expect(Buffer.byteLength(members.join(','))).toBeGreaterThan(MAX_BAGGAGE_BYTES);
    expect(Object.keys(parse(members.join(',')))).toEqual(['k0', 'k1', 'k2', 'k3']);
    expect(Object.keys(parse(members.join(`${padding},${padding}`)))).toEqual(['k0', 'k1', 'k2', 'k3']);
    // Without OWS, over the limit: the member that would cross it is left out.
    expect(Object.keys(parse(Array.from({ length: 5 }, (_, i) => `k${i}=${'x'.repeat(2000)}`).join(',')))).toHaveLength(4);
  });

  it('test_serialize_at_least_64: 64 members go out', () => {
    const entries = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`key${i}`, 'value']));
    expect(sent(entries).split(',')).toHaveLength(64);
  });

  it('test_serialize_long_entry: a member of 8192 bytes goes out whole', () => {
    expect(sent({ a: '0123456789'.repeat(819) })).toHaveLength(8192);
  });

  it.each([
    ['a+b', 'a+b=1'],
    ['k#1', 'k#1=1'],
    ['x|y', 'x|y=1'],
    ["$!%&'*^_`~", "$!%&'*^_`~=1"],
  ])('sends the key %s as it is: keys are tokens, only values are percent-encoded', (key, member) => {
    expect(sent({ [key]: '1' })).toBe(member);
    expect(sent({ [key]: 'a b' })).toBe(`${member.slice(0, -1)}a%20b`);
  });

  it.each(['bad key', 'ключ', 'a,b', 'a=b', 'a;b', '"q"'])('leaves out the key %j, which is no token and no header can carry', (key) => {
    expect(sent({ [key]: '1', ok: '2' })).toBe('ok=2');
  });
});
