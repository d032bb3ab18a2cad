import { ROOT_CONTEXT, baggageEntryMetadataFromString, defaultTextMapSetter, propagation, type BaggageEntry } from '@opentelemetry/api';
import { W3CBaggagePropagator } from '@opentelemetry/core';
import { describe, expect, it } from 'vitest';
import { createSession, names } from '../../src/session/index.js';
import {
  MAX_BAGGAGE_BYTES,
  MAX_BAGGAGE_MEMBERS,
  boundedEntries,
  boundedHeader,
  filterInboundBaggage,
  sessionBaggageEntries,
} from '../../src/session/baggage-entries.js';
import { baggageHeaderBytes } from '../helpers/propagation.js';
import { FULL_SESSION, MINIMAL_SESSION, routingRecord } from '../helpers/sessions.js';

function baggageOf(record: Record<string, string>) {
  return propagation.createBaggage(Object.fromEntries(Object.entries(record).map(([key, value]) => [key, { value }])));
}

describe('sessionBaggageEntries', () => {
  it('holds the routing, never names or the reply anchor', () => {
    const session = createSession(FULL_SESSION);
    const entries = sessionBaggageEntries(session);
    expect(Object.fromEntries(Object.entries(entries).map(([key, entry]) => [key, entry.value]))).toEqual(routingRecord(session));
  });

  it('leaves out the thread and user when there are none', () => {
    expect(Object.keys(sessionBaggageEntries(createSession(MINIMAL_SESSION))).sort()).toEqual(
      [names.CHAT_ID, names.CHAT_PLATFORM, names.CHAT_TYPE, names.SESSION_ID].sort(),
    );
  });
});

/** What the OpenTelemetry W3C propagator writes for `entries`: the oracle for `header`. */
function w3cHeader(entries: Record<string, BaggageEntry>): string {
  const carrier: Record<string, string> = {};
  new W3CBaggagePropagator().inject(propagation.setBaggage(ROOT_CONTEXT, propagation.createBaggage(entries)), carrier, defaultTextMapSetter);
  return carrier['baggage'] ?? '';
}

describe('boundedEntries and boundedHeader', () => {
  it('serialize what they keep as the W3C propagator does, metadata and unicode included', () => {
    const baggage = propagation.createBaggage({
      'chat.id': { value: 'a:b/ç,;= %' },
      tenant: { value: 'acme', metadata: baggageEntryMetadataFromString('ttl=1') },
      'session.id': { value: 'tl_x' },
      skip: { value: 'no' },
    });
    const { entries } = boundedEntries(baggage, (key) => key !== 'skip');
    expect(Object.keys(entries)).toEqual(['chat.id', 'session.id', 'tenant']);
    expect(boundedHeader(baggage, (key) => key !== 'skip')).toBe(w3cHeader(entries));
    expect(boundedHeader(baggage, () => false)).toBe('');
  });

  it('keeps what `keep` accepts, in order, and counts the rest as dropped', () => {
    const { entries, dropped } = boundedEntries(baggageOf({ a: '1', b: '2', c: '3' }), (key) => key !== 'b');
    expect(Object.keys(entries)).toEqual(['a', 'c']);
    expect(dropped).toBe(1);
  });

  it(`stops at ${MAX_BAGGAGE_MEMBERS} members`, () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v']));
    const { entries, dropped } = boundedEntries(baggageOf(many), () => true);
    expect(Object.keys(entries)).toHaveLength(MAX_BAGGAGE_MEMBERS);
    expect(dropped).toBe(100 - MAX_BAGGAGE_MEMBERS);
  });

  it("keeps threadline's own entries first, even after numeric-looking foreign keys", () => {
    const crowd = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [String(i), 'v']));
    const { entries } = boundedEntries(baggageOf({ 'chat.id': 'c', ...crowd, 'session.id': 's' }), () => true);
    expect(entries).toMatchObject({ 'chat.id': { value: 'c' }, 'session.id': { value: 's' } });
    expect(Object.keys(entries)).toHaveLength(MAX_BAGGAGE_MEMBERS);
  });

  it(`counts bytes percent-encoded, with metadata, and stays within ${MAX_BAGGAGE_BYTES}`, () => {
    const baggage = propagation
      .createBaggage({
        big: { value: 'é'.repeat(1200) }, // 7,200 bytes encoded
        meta: { value: 'x', metadata: baggageEntryMetadataFromString('p='.padEnd(1000, 'q')) },
        small: { value: 'y' },
        huge: { value: '"'.repeat(3000) },
      });
    const { entries, dropped } = boundedEntries(baggage, () => true);
    expect(Object.keys(entries)).toEqual(['big', 'small']);
    expect(dropped).toBe(2);
    const header = boundedHeader(baggage, () => true);
    expect(Buffer.byteLength(header)).toBe(7200 + 'big='.length + ',small=y'.length);
    expect(baggageHeaderBytes(propagation.setBaggage(ROOT_CONTEXT, propagation.createBaggage(entries)))).toBeLessThanOrEqual(
      MAX_BAGGAGE_BYTES,
    );
  });
});

describe('filterInboundBaggage', () => {
  const inbound = baggageOf({ 'chat.id': 'evil', 'Session.Id': 'evil', tenant: 'acme', foo: 'bar' });

  it('keeps nothing with false, counting every member dropped', () => {
    expect(filterInboundBaggage(inbound, false)).toEqual({ entries: {}, dropped: 4 });
  });

  it('keeps foreign members with true', () => {
    const { entries, dropped } = filterInboundBaggage(inbound, true);
    expect(Object.keys(entries)).toEqual(['tenant', 'foo']);
    expect(dropped).toBe(2);
  });

  it('keeps listed foreign members only, never threadline ones even when listed', () => {
    const { entries, dropped } = filterInboundBaggage(inbound, ['foo', 'chat.id', 'Session.Id']);
    expect(Object.keys(entries)).toEqual(['foo']);
    expect(dropped).toBe(3);
  });
});
