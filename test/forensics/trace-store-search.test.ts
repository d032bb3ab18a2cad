import { describe, expect, it } from 'vitest';
import type { StoredSpan, StoredTrace } from '../../src/forensics/trace-model.js';
import type { TraceQuery } from '../../src/forensics/trace-source.js';
import { normalTraceId, rankTraces, spanFilters, spanMatches } from '../../src/forensics/trace-store-search.js';

const QUERY: TraceQuery = { service: 'threadline', since: 1_000, until: 2_000, purpose: 'deliveries', limit: 10 };

function span(overrides: Partial<StoredSpan> = {}): StoredSpan {
  return {
    traceId: 'a'.repeat(32),
    spanId: 'b'.repeat(16),
    name: 'gateway.deliver',
    service: 'threadline',
    startMs: 1_500,
    endMs: 1_600,
    attributes: { 'chat.id': 'c1', 'delivery.attempt': 2 },
    events: [],
    links: [],
    status: 'unset',
    ...overrides,
  };
}

function trace(id: string, ...spans: Partial<StoredSpan>[]): StoredTrace {
  return { traceId: id, spans: spans.map((overrides) => span({ traceId: id, ...overrides })) };
}

describe('spanFilters', () => {
  it('asks for errored deliveries first, then all, by every attribute that can name the chat, and their forensic copies', () => {
    expect(spanFilters({ ...QUERY, chatId: 'c1', threadId: 't1' })).toEqual([
      ...[true, false].flatMap((errorOnly) =>
        ['gateway.deliver', 'threadline.forensic'].flatMap((operation) =>
          [
            { 'chat.id': 'c1', 'chat.thread.id': 't1' },
            { 'routing.destination.chat.id': 'c1', 'routing.destination.chat.thread.id': 't1' },
            { 'routing.origin.chat.id': 'c1', 'routing.origin.chat.thread.id': 't1' },
          ].map((attributes) => ({ operation, attributes, errorOnly })),
        ),
      ),
    ]);
    expect(spanFilters(QUERY)).toEqual([
      { operation: 'gateway.deliver', attributes: {}, errorOnly: true },
      { operation: 'threadline.forensic', attributes: {}, errorOnly: true },
      { operation: 'gateway.deliver', attributes: {}, errorOnly: false },
      { operation: 'threadline.forensic', attributes: {}, errorOnly: false },
    ]);
  });

  it('asks for a conversation by its chat and thread on any span', () => {
    expect(spanFilters({ ...QUERY, purpose: 'conversation', chatId: 'c1' })).toEqual([{ attributes: { 'chat.id': 'c1' }, errorOnly: false }]);
  });
});

describe('spanMatches', () => {
  const [errored, , all] = spanFilters(QUERY) as [never, never, never];
  it('checks the name, status, attributes as text, service and window', () => {
    expect(spanMatches(span(), all, QUERY)).toBe(true);
    expect(spanMatches(span(), errored, QUERY)).toBe(false);
    expect(spanMatches(span({ status: 'error' }), errored, QUERY)).toBe(true);
    expect(spanMatches(span({ name: 'cron.run' }), all, QUERY)).toBe(false);
    expect(spanMatches(span({ service: 'other' }), all, QUERY)).toBe(false);
    expect(spanMatches(span({ startMs: 999 }), all, QUERY)).toBe(false);
    expect(spanMatches(span({ startMs: 2_001 }), all, QUERY)).toBe(false);
    const { service: _, ...withoutService } = span();
    expect(spanMatches(withoutService, all, QUERY)).toBe(true);
    expect(spanMatches(span(), { attributes: { 'delivery.attempt': '2' }, errorOnly: false }, QUERY)).toBe(true);
    expect(spanMatches(span(), { attributes: { 'chat.id': 'c2' }, errorOnly: false }, QUERY)).toBe(false);
  });
});

describe('rankTraces', () => {
  it('keeps each trace once, its fullest copy, errored first, then newest, at most the limit', () => {
    const old = trace('1', { startMs: 1_100 });
    const newer = trace('2', { startMs: 1_900 });
    const erroredOld = trace('3', { startMs: 1_050, status: 'error' });
    const newerWhole = trace('2', { startMs: 1_900 }, { startMs: 1_950, spanId: 'c'.repeat(16) });
    expect(rankTraces([old, newer, erroredOld, newerWhole], 10)).toEqual([erroredOld, newerWhole, old]);
    expect(rankTraces([old, newer, erroredOld], 2)).toEqual([erroredOld, newer]);
  });
});

describe('normalTraceId', () => {
  it('pads and lowercases hex ids, refuses the rest', () => {
    expect(normalTraceId('ABC')).toBe(`${'0'.repeat(29)}abc`);
    expect(normalTraceId('0'.repeat(32))).toBeUndefined();
    expect(normalTraceId('xyz')).toBeUndefined();
    expect(normalTraceId('a'.repeat(33))).toBeUndefined();
  });
});
