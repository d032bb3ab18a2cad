import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { spansFromOtlpJson, TraceDocumentError } from '../../src/forensics/otlp-json.js';
import { FileSpanExporter } from '../../src/telemetry/index.js';
import { expectThreadlineError } from '../helpers/errors.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('otlp-json');
const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'threadline-gateway' }),
  spanProcessors: [new SimpleSpanProcessor(memory)],
});
const tracer = provider.getTracer('otlp-json-test');
afterAll(() => provider.shutdown());

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const SPAN_ID = 'eee19b7ec3c1b174';
const PARENT_ID = 'eee19b7ec3c1b173';
const LINK_TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const LINK_SPAN_ID = 'b7ad6b7169203331';

/** The one line FileSpanExporter writes for `spans`, parsed. */
async function writtenLine(spans: ReadableSpan[]): Promise<unknown> {
  const path = join(tempDir(), `${Math.random().toString(36).slice(2)}.jsonl`);
  const exporter = new FileSpanExporter(path);
  await new Promise((resolve) => exporter.export(spans, resolve));
  await exporter.shutdown();
  const lines = readFileSync(path, 'utf8').split('\n');
  expect(lines).toHaveLength(2);
  return JSON.parse(lines[0]!) as unknown;
}

function base64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

/** An OTLP/JSON span the way Tempo and jsonpb write one: base64 ids, enum names, numbers as strings. */
function tempoSpan(): Record<string, unknown> {
  return {
    traceId: base64(TRACE_ID),
    spanId: base64(SPAN_ID),
    parentSpanId: base64(PARENT_ID),
    name: 'gateway.deliver',
    kind: 'SPAN_KIND_INTERNAL',
    startTimeUnixNano: '1706678909209712000',
    endTimeUnixNano: '1706678909211212000',
    attributes: [
      { key: 'chat.id', value: { stringValue: '42' } },
      { key: 'delivery.attempt', value: { intValue: '2' } },
    ],
    status: { code: 'STATUS_CODE_ERROR', message: 'no route' },
    links: [{ traceId: base64(LINK_TRACE_ID), spanId: base64(LINK_SPAN_ID) }],
  };
}

function resourceSpans(spans: unknown[], scopesKey = 'scopeSpans'): unknown[] {
  return [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'threadline-gateway' } }] },
      [scopesKey]: [{ scope: { name: 'threadline' }, spans }],
    },
  ];
}

function expectTempoSpan(spans: readonly unknown[]): void {
  expect(spans).toEqual([
    {
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      parentSpanId: PARENT_ID,
      name: 'gateway.deliver',
      service: 'threadline-gateway',
      startMs: 1706678909209.712,
      endMs: 1706678909211.212,
      attributes: { 'chat.id': '42', 'delivery.attempt': 2 },
      events: [],
      links: [{ traceId: LINK_TRACE_ID, spanId: LINK_SPAN_ID }],
      status: 'error',
      statusMessage: 'no route',
    },
  ]);
}

describe('spansFromOtlpJson', () => {
  it('reads back every field of a line FileSpanExporter wrote', async () => {
    memory.reset();
    const root = tracer.startSpan('gateway.message', { startTime: 1_700_000_000_000.25 });
    const parentContext = { traceId: root.spanContext().traceId, spanId: root.spanContext().spanId, traceFlags: 1 };
    const child = tracer.startSpan(
      'gateway.deliver',
      {
        attributes: { 'chat.id': 'h_abc', 'delivery.attempt': 3, ratio: 0.5, 'delivery.queued': true, tags: ['a', 'b'], counts: [1, 2] },
        links: [{ context: { traceId: LINK_TRACE_ID, spanId: LINK_SPAN_ID, traceFlags: 1 } }],
        startTime: 1_700_000_000_001,
      },
      // The root as parent, passed in a context: no context manager is registered here.
      trace.setSpanContext(ROOT_CONTEXT, parentContext),
    );
    child.addEvent('routing.mismatch', { 'routing.origin.chat.id': 'h_abc', 'routing.destination.chat.thread.id': '' }, 1_700_000_000_002);
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'destination differs from origin' });
    child.end(1_700_000_000_003.5);
    root.setStatus({ code: SpanStatusCode.OK });
    root.end(1_700_000_000_004);
    const written = memory.getFinishedSpans();

    const spans = spansFromOtlpJson(await writtenLine(written), 'trace file test');

    expect(spans).toHaveLength(2);
    for (const original of written) {
      const read = spans.find((span) => span.spanId === original.spanContext().spanId)!;
      expect(read.traceId).toBe(original.spanContext().traceId);
      expect(read.name).toBe(original.name);
      expect(read.service).toBe('threadline-gateway');
      expect(read.startMs).toBeCloseTo(hrTimeToMilliseconds(original.startTime), 6);
      expect(read.endMs).toBeCloseTo(hrTimeToMilliseconds(original.endTime), 6);
    }
    const readRoot = spans.find((span) => span.name === 'gateway.message')!;
    expect(readRoot.parentSpanId).toBeUndefined();
    expect('parentSpanId' in readRoot).toBe(false);
    expect(readRoot.status).toBe('ok');
    expect(readRoot.statusMessage).toBeUndefined();
    expect(readRoot.startMs).toBeCloseTo(1_700_000_000_000.25, 6);

    const readChild = spans.find((span) => span.name === 'gateway.deliver')!;
    expect(readChild.parentSpanId).toBe(root.spanContext().spanId);
    expect(readChild.attributes).toEqual({
      'chat.id': 'h_abc',
      'delivery.attempt': 3,
      ratio: 0.5,
      'delivery.queued': true,
      tags: ['a', 'b'],
      counts: [1, 2],
    });
    expect(readChild.events).toEqual([
      {
        name: 'routing.mismatch',
        timeMs: 1_700_000_000_002,
        attributes: { 'routing.origin.chat.id': 'h_abc', 'routing.destination.chat.thread.id': '' },
      },
    ]);
    expect(readChild.links).toEqual([{ traceId: LINK_TRACE_ID, spanId: LINK_SPAN_ID }]);
    expect(readChild.status).toBe('error');
    expect(readChild.statusMessage).toBe('destination differs from origin');
    expect(readChild.endMs).toBeCloseTo(1_700_000_000_003.5, 6);
  });

  it("reads Tempo's /api/traces/<id> answer: batches, base64 ids, enum names, int64 as strings", () => {
    expectTempoSpan(spansFromOtlpJson({ batches: resourceSpans([tempoSpan()]) }, 'tempo'));
  });

  it("reads Tempo's /api/v2/traces/<id> answer, under trace, with resourceSpans or batches", () => {
    expectTempoSpan(spansFromOtlpJson({ trace: { resourceSpans: resourceSpans([tempoSpan()]) }, metrics: {} }, 'tempo'));
    expectTempoSpan(spansFromOtlpJson({ trace: { batches: resourceSpans([tempoSpan()]) } }, 'tempo'));
    expect(spansFromOtlpJson({ trace: {} }, 'tempo')).toEqual([]);
  });

  it("reads Jaeger api_v3's answer under result, and the older instrumentationLibrarySpans", () => {
    expectTempoSpan(spansFromOtlpJson({ result: { resourceSpans: resourceSpans([tempoSpan()]) } }, 'jaeger'));
    expectTempoSpan(spansFromOtlpJson({ resourceSpans: resourceSpans([tempoSpan()], 'instrumentationLibrarySpans') }, 'jaeger'));
  });

  it('takes url-safe and unpadded base64 ids, numeric times and status codes as numbers', () => {
    const span = {
      ...tempoSpan(),
      traceId: Buffer.from(TRACE_ID, 'hex').toString('base64url'),
      spanId: base64(SPAN_ID).replace(/=+$/, ''),
      startTimeUnixNano: 1_706_678_909_209_712_000,
      endTimeUnixNano: 1_706_678_909_211_212_000,
      status: { code: 2, message: 'no route' },
      attributes: [
        { key: 'chat.id', value: { stringValue: '42' } },
        { key: 'delivery.attempt', value: { intValue: 2 } },
      ],
    };
    const [read] = spansFromOtlpJson({ resourceSpans: resourceSpans([span]) }, 'jaeger');
    expect(read!.traceId).toBe(TRACE_ID);
    expect(read!.spanId).toBe(SPAN_ID);
    expect(read!.startMs).toBeCloseTo(1706678909209.712, 3);
    expect(read!.status).toBe('error');
    expect(read!.attributes['delivery.attempt']).toBe(2);
  });

  it('renders kvlist, bytes and nested values as text, keeps an int64 past 2^53 exact, and takes omissions', () => {
    const span = {
      traceId: TRACE_ID.toUpperCase(),
      spanId: SPAN_ID,
      parentSpanId: '',
      name: 'cron.run',
      startTimeUnixNano: '1706678909209712000',
      attributes: [
        { key: 'map', value: { kvlistValue: { values: [{ key: 'a', value: { intValue: '1' } }, { key: 'b', value: { stringValue: 'x' } }] } } },
        { key: 'raw', value: { bytesValue: 'AQID' } },
        { key: 'nested', value: { arrayValue: { values: [{ stringValue: 'a' }, { arrayValue: { values: [{ boolValue: true }] } }] } } },
        { key: 'big', value: { intValue: '9007199254740993' } },
        { key: 'empty', value: {} },
        { key: 'ratio', value: { doubleValue: '0.25' } },
      ],
    };
    const [read] = spansFromOtlpJson({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }, 'file');
    expect(read).toEqual({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      name: 'cron.run',
      startMs: 1706678909209.712,
      endMs: 1706678909209.712,
      attributes: { map: '{"a":"1","b":"x"}', raw: 'AQID', nested: ['a', '[true]'], big: '9007199254740993', empty: '', ratio: 0.25 },
      events: [],
      links: [],
      status: 'unset',
    });
  });

  it('cuts a nested value too deep to render instead of overflowing the stack', () => {
    let value: unknown = { stringValue: 'bottom' };
    for (let level = 0; level < 100_000; level++) value = { arrayValue: { values: [value] } };
    const span = { traceId: TRACE_ID, spanId: SPAN_ID, name: 'deep', startTimeUnixNano: '1', attributes: [{ key: 'deep', value: { arrayValue: { values: [value] } } }] };
    const [read] = spansFromOtlpJson({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }, 'file');
    expect(String((read!.attributes['deep'] as string[])[0])).toMatch(/^\[\[\[.*…/);
  });

  it('takes an empty document and empty lists', () => {
    expect(spansFromOtlpJson({ resourceSpans: [] }, 'file')).toEqual([]);
    expect(spansFromOtlpJson({ resourceSpans: [{}] }, 'file')).toEqual([]);
    expect(spansFromOtlpJson({ resourceSpans: [{ scopeSpans: [{}] }] }, 'file')).toEqual([]);
  });

  const malformed: readonly [string, unknown, RegExp][] = [
    ['null', null, /the document is null, not a JSON object/],
    ['a string', 'upstream connect error', /the document is "upstream connect error"/],
    ['an array', [], /an array, not a JSON object/],
    ['an object of another kind', { data: [], total: 0 }, /without resourceSpans, batches, result or trace/],
    ['resourceSpans not an array', { resourceSpans: {} }, /resourceSpans in the document is an object, not an array/],
    ['batches not an array', { batches: 'x' }, /batches in the document is "x", not an array/],
    ['result not an object', { result: [] }, /"result" is an array, not an object/],
    ['trace.resourceSpans not an array', { trace: { resourceSpans: 1 } }, /resourceSpans in "trace" is number 1/],
    ['a resourceSpans entry not an object', { resourceSpans: [7] }, /resourceSpans\[0\] is number 7/],
    ['scopeSpans not an array', { resourceSpans: [{ scopeSpans: {} }] }, /scopeSpans of resourceSpans\[0\] is an object/],
    ['a span without a name', { resourceSpans: resourceSpans([{ ...tempoSpan(), name: undefined }]) }, /scopeSpans\[0\]\.spans\[0\] has no name/],
    ['a span without an id', { resourceSpans: resourceSpans([{ ...tempoSpan(), spanId: undefined }]) }, /the spanId of span .* is missing/],
    ['a trace id of the wrong length', { resourceSpans: resourceSpans([{ ...tempoSpan(), traceId: 'abc123' }]) }, /the traceId .* is "abc123", not 32 hex digits or 16 bytes in base64/],
    ['a span id in base64 of 16 bytes', { resourceSpans: resourceSpans([{ ...tempoSpan(), spanId: base64(TRACE_ID) }]) }, /not 16 hex digits or 8 bytes/],
    ['a trace id of zeros', { resourceSpans: resourceSpans([{ ...tempoSpan(), traceId: '0'.repeat(32) }]) }, /all zeros/],
    ['a bad parent id', { resourceSpans: resourceSpans([{ ...tempoSpan(), parentSpanId: 'zz' }]) }, /the parentSpanId/],
    ['a bad link id', { resourceSpans: resourceSpans([{ ...tempoSpan(), links: [{ traceId: 'x', spanId: SPAN_ID }] }]) }, /the traceId of link/],
    ['no start time', { resourceSpans: resourceSpans([{ ...tempoSpan(), startTimeUnixNano: undefined }]) }, /has no startTimeUnixNano/],
    ['a start time that is no number', { resourceSpans: resourceSpans([{ ...tempoSpan(), startTimeUnixNano: '17e8' }]) }, /not a count of nanoseconds/],
    ['an unknown status code', { resourceSpans: resourceSpans([{ ...tempoSpan(), status: { code: 7 } }]) }, /status code .* is number 7/],
    ['attributes not an array', { resourceSpans: resourceSpans([{ ...tempoSpan(), attributes: { a: 1 } }]) }, /attributes of .* is an object, not an array/],
    ['an attribute of the wrong type', { resourceSpans: resourceSpans([{ ...tempoSpan(), attributes: [{ key: 'a', value: { stringValue: 5 } }] }]) }, /attribute "a" .* is number 5, not a string/],
    ['an attribute without a key', { resourceSpans: resourceSpans([{ ...tempoSpan(), attributes: [{ value: { stringValue: 'x' } }] }]) }, /not a \{key, value\} pair/],
    ['an event without a time', { resourceSpans: resourceSpans([{ ...tempoSpan(), events: [{ name: 'e' }] }]) }, /event at .* has no timeUnixNano/],
    ['events not an array', { resourceSpans: resourceSpans([{ ...tempoSpan(), events: 'e' }]) }, /events of .* is "e", not an array/],
  ];

  it.each(malformed)('throws TL_TRACE_SOURCE naming the source for %s', (_what, body, problem) => {
    const error = expectThreadlineError(() => spansFromOtlpJson(body, 'tempo http://127.0.0.1:3200'), 'TL_TRACE_SOURCE');
    expect(error).toBeInstanceOf(TraceDocumentError);
    expect(error.message).toMatch(/^tempo http:\/\/127\.0\.0\.1:3200 answered with something that is not OTLP\/JSON traces: /);
    expect(error.message).toMatch(problem);
  });
});
