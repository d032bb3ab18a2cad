import { propagation, trace } from '@opentelemetry/api';
import { W3CBaggagePropagator, W3CTraceContextPropagator, CompositePropagator } from '@opentelemetry/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_OUTBOUND_POLICY,
  MAX_BAGGAGE_BYTES,
  MAX_BAGGAGE_MEMBERS,
  getSession,
  inboundContext,
  isSessionNamespaceKey,
  type InboundHeaders,
  type InboundOptions,
  type TraceparentPolicy,
} from '../../src/session/index.js';
import { INBOUND_LINK_ATTRIBUTE } from '../../src/session/inbound.js';
import { createPropagator } from '../../src/telemetry/index.js';
import { hostileBaggageArb, inboundHeadersArb } from '../helpers/arbitraries.js';
import { SPOOFED_HEADER, SPOOFED_MEMBERS } from '../helpers/baggage.js';
import { baggageHeaderBytes, baggageRecord, useGlobalPropagator } from '../helpers/propagation.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

const SPOOFED = SPOOFED_HEADER;
const SPOOFED_COUNT = SPOOFED_MEMBERS.length;

/** Headers cast as node:http would never give them, for hostile-input tests. */
function hostile(headers: Record<string, unknown>): InboundHeaders {
  return headers as InboundHeaders;
}

function members(count: number, make: (i: number) => string): string {
  return Array.from({ length: count }, (_, i) => make(i)).join(',');
}

describe('inboundContext: traceparent policies', () => {
  const cases: [string, InboundOptions, 'parent' | 'link' | 'none'][] = [
    ['trust', { traceparent: 'trust' }, 'parent'],
    ['link', { traceparent: 'link' }, 'link'],
    ['ignore', { traceparent: 'ignore' }, 'none'],
    ['auto, authenticated', { traceparent: 'auto', authenticated: true }, 'parent'],
    ['auto, not authenticated', { traceparent: 'auto', authenticated: false }, 'link'],
    ['default options', {}, 'link'],
    ['default policy, authenticated', { authenticated: true }, 'parent'],
    ['trust, even unauthenticated', { traceparent: 'trust', authenticated: false }, 'parent'],
    ['link, even authenticated', { traceparent: 'link', authenticated: true }, 'link'],
    ['ignore, even authenticated', { traceparent: 'ignore', authenticated: true }, 'none'],
  ];

  it.each(cases)('%s', (_name, options, expected) => {
    const { context: ctx, links } = inboundContext({ traceparent: TRACEPARENT }, options);
    const parent = trace.getSpanContext(ctx);
    if (expected === 'parent') {
      expect(parent).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
      expect(links).toEqual([]);
    } else {
      expect(parent).toBeUndefined();
      if (expected === 'link') {
        expect(links).toHaveLength(1);
        expect(links[0]!.context).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
        expect(links[0]!.attributes).toEqual({ [INBOUND_LINK_ATTRIBUTE]: 'inbound' });
      } else {
        expect(links).toEqual([]);
      }
    }
    expect(getSession(ctx)).toBeUndefined();
  });

  it.each<TraceparentPolicy>(['trust', 'link', 'ignore', 'auto'])('%s without a traceparent: no parent, no link', (policy) => {
    const { context: ctx, links } = inboundContext({}, { traceparent: policy, authenticated: true });
    expect(trace.getSpanContext(ctx)).toBeUndefined();
    expect(links).toEqual([]);
  });

  it('keeps tracestate with a trusted parent, and cuts an oversized one down to nothing when its only member is too long', () => {
    const trusted = inboundContext({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' }, { traceparent: 'trust' });
    expect(trace.getSpanContext(trusted.context)?.traceState?.get('vendor')).toBe('abc');
    const oversized = inboundContext({ traceparent: TRACEPARENT, tracestate: `vendor=${'a'.repeat(600)}` }, { traceparent: 'trust' });
    expect(trace.getSpanContext(oversized.context)?.traceId).toBe(TRACE_ID);
    expect(trace.getSpanContext(oversized.context)?.traceState).toBeUndefined();
  });

  it('accepts a traceparent given as a one-element array', () => {
    expect(trace.getSpanContext(inboundContext({ traceparent: [TRACEPARENT] }, { traceparent: 'trust' }).context)?.traceId).toBe(TRACE_ID);
  });

  it.each([
    ['repeated', [TRACEPARENT, `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`]],
    ['repeated identically', [TRACEPARENT, TRACEPARENT]],
    ['garbage', 'garbage'],
    ['non-hex', `00-${'z'.repeat(32)}-${SPAN_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
    ['version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ['version 00 with more fields, oversized', `00-${TRACE_ID}-${SPAN_ID}-01-${'a'.repeat(200)}`],
    ['a future version with no "-" after its flags, oversized', `cc-${TRACE_ID}-${SPAN_ID}-01.${'a'.repeat(200)}`],
    ['a number', 42],
    ['an object', { traceId: TRACE_ID }],
    ['null', null],
    ['an empty array', []],
  ])('drops a traceparent that is %s, even when trusted', (_name, traceparent) => {
    const { context: ctx, links } = inboundContext(hostile({ traceparent }), { traceparent: 'trust' });
    expect(trace.getSpanContext(ctx)).toBeUndefined();
    expect(links).toEqual([]);
  });
});

describe('inboundContext: the trace headers of OTEL_PROPAGATORS (b3, jaeger)', () => {
  useGlobalPropagator(createPropagator({ outboundBaggage: DEFAULT_OUTBOUND_POLICY, inboundBaggage: true, propagators: ['b3', 'jaeger'] }));
  const formats: [string, InboundHeaders][] = [
    ['b3', { b3: `${TRACE_ID}-${SPAN_ID}-1` }],
    ['uber-trace-id', { 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:01` }],
  ];

  it.each(formats)('%s: parents an authenticated request, only links an unauthenticated one', (_name, headers) => {
    const trusted = inboundContext(headers, { authenticated: true });
    expect(trace.getSpanContext(trusted.context)).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    expect(trusted.links).toEqual([]);
    const linked = inboundContext(headers, { authenticated: false });
    expect(trace.getSpanContext(linked.context)).toBeUndefined();
    expect(linked.links.map((link) => link.context.spanId)).toEqual([SPAN_ID]);
    expect(trace.getSpanContext(inboundContext(headers, { traceparent: 'ignore', authenticated: true }).context)).toBeUndefined();
  });

  it.each([
    ['oversized', { b3: `${TRACE_ID}-${SPAN_ID}-1-${'a'.repeat(200)}` }],
    ['repeated', { b3: [`${TRACE_ID}-${SPAN_ID}-1`, `${TRACE_ID}-${SPAN_ID}-1`] }],
    ['not a string', hostile({ b3: 42 })],
  ] as [string, InboundHeaders][])('drops a b3 header that is %s, even when trusted', (_name, headers) => {
    const { context: ctx, links } = inboundContext(headers, { traceparent: 'trust' });
    expect(trace.getSpanContext(ctx)).toBeUndefined();
    expect(links).toEqual([]);
  });

  it('reads no uberctx-* baggage: a caller cannot name a chat that way, whatever baggage is kept', () => {
    const { context: ctx } = inboundContext(
      { 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:01`, 'uberctx-chat.id': 'evil', 'uberctx-tenant': 'acme' },
      { authenticated: true, keepBaggage: true },
    );
    expect(trace.getSpanContext(ctx)?.traceId).toBe(TRACE_ID);
    expect(getSession(ctx)).toBeUndefined();
    expect(propagation.getBaggage(ctx)).toBeUndefined();
  });
});

describe('inboundContext: baggage', () => {
  it('never lets threadline-namespace keys in, in any case, nor sets a session from them', () => {
    for (const keepBaggage of [false, true, ['chat.id', 'Chat.Id', 'session.id', 'foo']]) {
      const result = inboundContext({ baggage: `${SPOOFED},foo=bar` }, { keepBaggage });
      expect(getSession(result.context)).toBeUndefined();
      for (const key of Object.keys(baggageRecord(result.context))) expect(isSessionNamespaceKey(key)).toBe(false);
    }
  });

  it('keeps no baggage by default', () => {
    const result = inboundContext({ baggage: `${SPOOFED},foo=bar` });
    expect(propagation.getBaggage(result.context)).toBeUndefined();
    expect(result.droppedBaggage).toBe(SPOOFED_COUNT + 1);
  });

  it('keeps all foreign baggage with keepBaggage: true', () => {
    const result = inboundContext({ baggage: `${SPOOFED},foo=bar,tenant=acme` }, { keepBaggage: true });
    expect(baggageRecord(result.context)).toEqual({ foo: 'bar', tenant: 'acme' });
    expect(result.droppedBaggage).toBe(SPOOFED_COUNT);
  });

  it('keeps the listed foreign keys with keepBaggage: [list]', () => {
    const result = inboundContext({ baggage: `${SPOOFED},foo=bar,tenant=acme` }, { keepBaggage: ['tenant', 'chat.id'] });
    expect(baggageRecord(result.context)).toEqual({ tenant: 'acme' });
    expect(result.droppedBaggage).toBe(SPOOFED_COUNT + 1);
  });

  it('joins a baggage header split over several lines', () => {
    const result = inboundContext({ baggage: ['foo=1', 'bar=2,chat.id=x'] }, { keepBaggage: true });
    expect(baggageRecord(result.context)).toEqual({ foo: '1', bar: '2' });
    expect(result.droppedBaggage).toBe(1);
  });

  it(`keeps at most ${MAX_BAGGAGE_MEMBERS} members`, () => {
    const result = inboundContext({ baggage: members(200, (i) => `k${i}=v`) }, { keepBaggage: true });
    const kept = Object.keys(baggageRecord(result.context));
    expect(kept).toHaveLength(MAX_BAGGAGE_MEMBERS);
    expect(kept[0]).toBe('k0');
    expect(result.droppedBaggage).toBe(200 - MAX_BAGGAGE_MEMBERS);
  });

  it(`keeps a header of up to ${MAX_BAGGAGE_BYTES} bytes whole`, () => {
    const header = members(8, (i) => `k${i}=${'x'.repeat(1000)}`);
    expect(Buffer.byteLength(header)).toBeLessThanOrEqual(MAX_BAGGAGE_BYTES);
    const result = inboundContext({ baggage: header }, { keepBaggage: true });
    expect(Object.keys(baggageRecord(result.context))).toHaveLength(8);
    expect(result.droppedBaggage).toBe(0);
  });

  it(`judges the ${MAX_BAGGAGE_BYTES}-byte limit without optional whitespace around members, '=' and ';'`, () => {
    const padding = ' \t'.repeat(50);
    const header = members(4, (i) => `k${i}${padding}=${padding}${'x'.repeat(2000)}${padding};${padding}p`).replaceAll(',', `${padding},${padding}`);
    expect(Buffer.byteLength(header)).toBeGreaterThan(MAX_BAGGAGE_BYTES);
    const result = inboundContext({ baggage: header }, { keepBaggage: true });
    expect(Object.keys(baggageRecord(result.context))).toEqual(['k0', 'k1', 'k2', 'k3']);
    expect(result.droppedBaggage).toBe(0);
  });

  it(`bounds what it keeps to ${MAX_BAGGAGE_BYTES} bytes as it would be sent on`, () => {
    // '"' is one byte raw and three percent-encoded: the parsed members outgrow the header.
    const header = `a=${'"'.repeat(2000)},b=${'"'.repeat(2000)},c=1`;
    const result = inboundContext({ baggage: header }, { keepBaggage: true });
    expect(Object.keys(baggageRecord(result.context))).toEqual(['a', 'c']);
    expect(baggageHeaderBytes(result.context)).toBeLessThanOrEqual(MAX_BAGGAGE_BYTES);
    expect(result.droppedBaggage).toBe(1);
  });
});

describe('inboundContext: the option wins over the propagator default', () => {
  describe('with a propagator that keeps all inbound baggage', () => {
    useGlobalPropagator({ outboundBaggage: { keys: [], hosts: [] }, inboundBaggage: true });

    it('keeps none with keepBaggage: false', () => {
      const result = inboundContext({ baggage: 'foo=bar' }, { keepBaggage: false });
      expect(propagation.getBaggage(result.context)).toBeUndefined();
      expect(result.droppedBaggage).toBe(1);
    });
  });

  describe('with a plain W3C propagator that filters nothing', () => {
    useGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));

    it('still drops threadline keys and honours keepBaggage', () => {
      const result = inboundContext({ baggage: `${SPOOFED},foo=bar,tenant=acme` }, { keepBaggage: ['foo'] });
      expect(baggageRecord(result.context)).toEqual({ foo: 'bar' });
      expect(getSession(result.context)).toBeUndefined();
    });
  });
});

describe('inboundContext: hostile input', () => {
  it.each([
    ['a header over 8192 bytes', `foo=${'x'.repeat(9000)}`, 1],
    ['10,000 members', members(10_000, (i) => `k${i}=v`), 10_000],
    ['1,000 members within 8192 bytes', members(1000, (i) => `k${i}=1`), 1000 - MAX_BAGGAGE_MEMBERS],
    ['percent-encoding garbage', '%zz=1,a=%E0%A4%A,%E0%A4%A=2,b=%ED%A0%80,ok=1', 4],
    ['members without "="', 'foo,=bar,baz=,ok=1', 3],
    ['an array with a non-string part', ['ok=1', 42], 2],
    ['an array of numbers', [1, 2], 2],
    ['a number', 42, 1],
    ['an object', { foo: 'bar' }, 1],
    ['null', null, 1],
  ])('%s: no throw, no session, dropped members counted', (_name, baggage, dropped) => {
    const result = inboundContext(hostile({ baggage, traceparent: TRACEPARENT }), { keepBaggage: true, traceparent: 'trust' });
    expect(getSession(result.context)).toBeUndefined();
    expect(result.droppedBaggage).toBe(dropped);
    const kept = baggageRecord(result.context);
    expect(Object.keys(kept).length).toBeLessThanOrEqual(MAX_BAGGAGE_MEMBERS);
    expect(kept['foo']).toBeUndefined();
    expect(trace.getSpanContext(result.context)?.traceId).toBe(TRACE_ID);
  });

  it('never throws, never sets a session, and keeps baggage bounded and foreign (fuzz)', () => {
    const optionsArb = fc.record(
      {
        traceparent: fc.constantFrom<TraceparentPolicy>('trust', 'link', 'ignore', 'auto'),
        authenticated: fc.boolean(),
        keepBaggage: fc.oneof(fc.boolean(), fc.array(fc.constantFrom('foo', 'tenant', 'chat.id', 'Chat.Id', 'session.id'))),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(inboundHeadersArb, optionsArb, (headers, options) => {
        const result = inboundContext(hostile(headers), options);
        expect(getSession(result.context)).toBeUndefined();
        const keys = Object.keys(baggageRecord(result.context));
        expect(keys.length).toBeLessThanOrEqual(MAX_BAGGAGE_MEMBERS);
        expect(keys.filter(isSessionNamespaceKey)).toEqual([]);
        expect(baggageHeaderBytes(result.context)).toBeLessThanOrEqual(MAX_BAGGAGE_BYTES);
        expect(Number.isInteger(result.droppedBaggage) && result.droppedBaggage >= 0).toBe(true);
        if (result.links.length > 0) expect(trace.getSpanContext(result.context)).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('keeps only members that were in the header, unchanged (fuzz)', () => {
    /** Every decodable key=value pair of a header, as received. */
    function receivedPairs(header: string): Set<string> {
      const pairs = new Set<string>();
      for (const member of header.split(',')) {
        const pair = member.split(';')[0]!;
        const separator = pair.indexOf('=');
        try {
          pairs.add(JSON.stringify([decodeURIComponent(pair.slice(0, separator).trim()), decodeURIComponent(pair.slice(separator + 1).trim())]));
        } catch {
          // not decodable: cannot have been kept
        }
      }
      return pairs;
    }
    fc.assert(
      fc.property(hostileBaggageArb, (baggage) => {
        const result = inboundContext({ baggage }, { keepBaggage: true });
        const received = receivedPairs(baggage);
        for (const pair of Object.entries(baggageRecord(result.context))) expect(received).toContain(JSON.stringify(pair));
        expect(result.droppedBaggage).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 300 },
    );
  });
});
