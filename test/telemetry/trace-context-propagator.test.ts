import { ROOT_CONTEXT, defaultTextMapGetter, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { inboundContext } from '../../src/session/index.js';
import { createPropagator } from '../../src/telemetry/index.js';

// Cases of the W3C Trace Context test suite (w3c/trace-context test/test.py), as a table.
const TRACE_ID = '12345678901234567890123456789012';
const PARENT_ID = '1234567890123456';
const FUTURE = 'what-the-future-will-be-like';
const propagator = createPropagator();

/** The trace id threadline's propagator continues from `headers`; undefined when it restarts the trace. */
function continuedTraceId(headers: Record<string, string | string[]>): string | undefined {
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter))?.traceId;
}

function tracestateOf(headers: Record<string, string | string[]>): string | undefined {
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter))?.traceState?.serialize();
}

describe('traceparent: the W3C Trace Context test suite', () => {
  it.each([
    ['test_traceparent_included_tracestate_missing', `00-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_0xcc', `cc-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_0xcc (more fields)', `cc-${TRACE_ID}-${PARENT_ID}-01-${FUTURE}`],
    ['a future version over 128 characters', `cc-${TRACE_ID}-${PARENT_ID}-01-${'x'.repeat(200)}`],
    ['test_traceparent_ows_handling (space)', ` 00-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_ows_handling (tab)', `\t00-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_ows_handling (trailing space)', `00-${TRACE_ID}-${PARENT_ID}-01 `],
    ['test_traceparent_ows_handling (trailing tab)', `00-${TRACE_ID}-${PARENT_ID}-01\t`],
    ['test_traceparent_ows_handling (both)', `\t 00-${TRACE_ID}-${PARENT_ID}-01 \t`],
  ])('%s: continues the trace', (_name, traceparent) => {
    expect(continuedTraceId({ traceparent })).toBe(TRACE_ID);
  });

  it.each([
    ['test_traceparent_version_0x00 (trailing dot)', `00-${TRACE_ID}-${PARENT_ID}-01.`],
    ['test_traceparent_version_0x00 (more fields)', `00-${TRACE_ID}-${PARENT_ID}-01-${FUTURE}`],
    ['test_traceparent_version_0xcc (dot after flags)', `cc-${TRACE_ID}-${PARENT_ID}-01.${FUTURE}`],
    ['test_traceparent_version_0xff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
    ['version ff with more fields', `ff-${TRACE_ID}-${PARENT_ID}-01-${FUTURE}`],
    ['test_traceparent_version_illegal_characters (.0)', `.0-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_illegal_characters (0.)', `0.-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_too_long (000)', `000-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_too_long (0000)', `0000-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_version_too_short', `0-${TRACE_ID}-${PARENT_ID}-01`],
    ['test_traceparent_trace_id_all_zero', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
    ['test_traceparent_trace_id_illegal_characters', `00-.${TRACE_ID.slice(1)}-${PARENT_ID}-01`],
    ['test_traceparent_trace_id_too_long', `00-${TRACE_ID}3-${PARENT_ID}-01`],
    ['test_traceparent_trace_id_too_short', `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`],
    ['test_traceparent_parent_id_all_zero', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['test_traceparent_parent_id_illegal_characters', `00-${TRACE_ID}-.${PARENT_ID.slice(1)}-01`],
    ['test_traceparent_parent_id_too_long', `00-${TRACE_ID}-${PARENT_ID}7-01`],
    ['test_traceparent_parent_id_too_short', `00-${TRACE_ID}-${PARENT_ID.slice(1)}-01`],
    ['test_traceparent_trace_flags_illegal_characters (.0)', `00-${TRACE_ID}-${PARENT_ID}-.0`],
    ['test_traceparent_trace_flags_illegal_characters (0.)', `00-${TRACE_ID}-${PARENT_ID}-0.`],
    ['test_traceparent_trace_flags_too_long', `00-${TRACE_ID}-${PARENT_ID}-001`],
    ['test_traceparent_trace_flags_too_short', `00-${TRACE_ID}-${PARENT_ID}-1`],
    ['a future version shorter than 55 characters', `cc-${TRACE_ID}-${PARENT_ID}-1`],
  ])('%s: restarts the trace', (_name, traceparent) => {
    expect(continuedTraceId({ traceparent })).toBeUndefined();
  });

  it('test_traceparent_duplicated: two traceparent headers restart the trace', () => {
    expect(continuedTraceId({ traceparent: [`00-${TRACE_ID}-${PARENT_ID}-01`, `00-${TRACE_ID.replace(/2$/, '1')}-${PARENT_ID}-01`] })).toBeUndefined();
  });

  it('inboundContext continues a trusted future-version traceparent over 128 characters', () => {
    const traceparent = `cc-${TRACE_ID}-${PARENT_ID}-01-${'x'.repeat(200)}`;
    const inbound = inboundContext({ traceparent }, { traceparent: 'trust' });
    expect(trace.getSpanContext(inbound.context)).toMatchObject({ traceId: TRACE_ID, spanId: PARENT_ID, traceFlags: 1 });
    const refused = inboundContext({ traceparent: `00-${TRACE_ID}-${PARENT_ID}-01-${'x'.repeat(200)}` }, { traceparent: 'trust' });
    expect(trace.getSpanContext(refused.context)).toBeUndefined();
  });
});

describe('tracestate: the W3C Trace Context test suite and its limits', () => {
  const traceparent = `00-${TRACE_ID}-${PARENT_ID}-00`;

  it.each([
    ['test_tracestate_included_traceparent_included', 'foo=1,bar=2', 'foo=1,bar=2'],
    ['test_tracestate_ows_handling', 'foo=1 \t , \t bar=2, \t baz=3', 'foo=1,bar=2,baz=3'],
    ['test_tracestate_ows_handling (tabs)', 'foo=1\t \t,\t \tbar=2,\t \tbaz=3', 'foo=1,bar=2,baz=3'],
    ['test_tracestate_ows_handling (leading)', '\t foo=1 \t', 'foo=1'],
    ['test_tracestate_multiple_headers_different_keys', ['foo=1,bar=2', 'rojo=1,congo=2', 'baz=3'], 'foo=1,bar=2,rojo=1,congo=2,baz=3'],
    ['test_tracestate_empty_header (empty then foo)', ['', 'foo=1'], 'foo=1'],
  ])('%s', (_name, tracestate, expected) => {
    expect(tracestateOf({ traceparent, tracestate })).toBe(expected);
  });

  const member = (i: number, length = 10): string => `k${String(i).padStart(2, '0')}=${'v'.repeat(length - 4)}`;

  it('test_tracestate_member_count_limit: 32 members kept, 33 discarded', () => {
    const members = Array.from({ length: 33 }, (_, i) => `bar${String(i + 1).padStart(2, '0')}=${String(i + 1).padStart(2, '0')}`);
    const headers = (count: number) => [members.slice(0, 10), members.slice(10, 20), members.slice(20, 30), members.slice(30, count)].map((part) => part.join(','));
    expect(tracestateOf({ traceparent, tracestate: headers(32) })).toBe(members.slice(0, 32).join(','));
    expect(tracestateOf({ traceparent, tracestate: headers(33) })).toBeUndefined();
  });

  it.each([
    ['test_tracestate_duplicated_keys', ['foo=1,foo=1']],
    ['test_tracestate_duplicated_keys (different values)', ['foo=1,foo=2']],
    ['test_tracestate_duplicated_keys (two headers)', ['foo=1', 'foo=2']],
    ['test_tracestate_key_illegal_characters (space)', ['foo =1']],
    ['test_tracestate_key_illegal_characters (upper case)', ['FOO=1']],
    ['test_tracestate_key_illegal_characters (dot)', ['foo.bar=1']],
    ['test_tracestate_key_illegal_vendor_format (foo@)', ['foo@=1,bar=2']],
    ['test_tracestate_key_illegal_vendor_format (@foo)', ['@foo=1,bar=2']],
    ['test_tracestate_key_illegal_vendor_format (@@)', ['foo@@bar=1,bar=2']],
    ['test_tracestate_key_illegal_vendor_format (two @)', ['foo@bar@baz=1,bar=2']],
    ['test_tracestate_key_length_limit (257)', ['foo=1', `${'z'.repeat(257)}=1`]],
    ['test_tracestate_key_length_limit (tenant of 242)', ['foo=1', `${'t'.repeat(242)}@v=1`]],
    ['test_tracestate_key_length_limit (system of 15)', ['foo=1', `t@${'v'.repeat(15)}=1`]],
    ['test_tracestate_value_illegal_characters (=)', ['foo=bar=baz']],
    ['test_tracestate_value_illegal_characters (empty)', ['foo=,bar=3']],
  ])('%s: discarded whole', (_name, tracestate) => {
    expect(tracestateOf({ traceparent, tracestate })).toBeUndefined();
  });

  it.each([
    ['test_tracestate_key_length_limit (256)', ['foo=1', `${'z'.repeat(256)}=1`]],
    ['test_tracestate_key_length_limit (tenant of 241, system of 14)', ['foo=1', `${'t'.repeat(241)}@${'v'.repeat(14)}=1`]],
  ])('%s: kept', (_name, tracestate) => {
    expect(tracestateOf({ traceparent, tracestate })).toBe(tracestate.join(','));
  });

  it('test_tracestate_all_allowed_characters: kept as sent', () => {
    const key = 'abcdefghijklmnopqrstuvwxyz0123456789_-*/';
    const value = [[0x20, 0x2b], [0x2d, 0x3c], [0x3e, 0x7e]].flatMap(([from, to]) => Array.from({ length: to! - from! + 1 }, (_, i) => String.fromCharCode(from! + i))).join('');
    for (const member of [`${key}=${value}`, `${key}@a-z0-9_-*/=${value}`]) expect(tracestateOf({ traceparent, tracestate: member })).toBe(member);
  });

  it('over 512 characters: members over 128 characters go first, then members from the end', () => {
    const long = `long=${'x'.repeat(200)}`;
    const short = Array.from({ length: 30 }, (_, i) => member(i, 15));
    // 30 × 15 + 29 commas = 479 characters; with the long member, 685.
    const header = [short[0], long, ...short.slice(1)].join(',');
    expect(tracestateOf({ traceparent, tracestate: header })).toBe(short.join(','));
    const many = Array.from({ length: 31 }, (_, i) => member(i, 20));
    // 31 × 20 + 30 = 650: the last six go (24 × 20 + 23 = 503).
    expect(tracestateOf({ traceparent, tracestate: many.join(',') })).toBe(many.slice(0, 24).join(','));
  });

  it('inboundContext keeps what fits of a tracestate over 512 characters', () => {
    const big = Array.from({ length: 5 }, (_, i) => `big${i}=${'x'.repeat(200)}`);
    const header = ['vendor=abc', ...big, 'other=def'].join(',');
    const inbound = inboundContext({ traceparent, tracestate: header }, { traceparent: 'trust' });
    // Over 128 characters each, the big members go first, from the end, until it fits.
    expect(trace.getSpanContext(inbound.context)?.traceState?.serialize()).toBe(['vendor=abc', big[0], big[1], 'other=def'].join(','));
  });
});
