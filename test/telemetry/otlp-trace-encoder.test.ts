import type { AttributeValue, Attributes, HrTime, Link } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeTraceExportRequest } from '../../src/telemetry/otlp-trace-encoder.js';

// The library's serializer is the oracle: a collector must read our bytes exactly as it reads
// the SDK's.
const libraryBytes = (spans: ReadableSpan[]) => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
const ourBytes = (spans: ReadableSpan[]) => Buffer.from(encodeTraceExportRequest(spans));

const RESOURCES = [
  resourceFromAttributes({ 'service.name': 'threadline', 'process.pid': 4242, 'host.arch': 'amd64' }),
  resourceFromAttributes({ 'service.name': 'другой', 'deployment.environment': 'test' }),
  // Resource attributes are not sanitised by the SDK: bytes and objects reach the encoder.
  resourceFromAttributes({ raw: new Uint8Array([0, 1, 255]), nested: { a: 'b', n: [1, 2] } } as unknown as Attributes),
];
const SCOPES = [
  { name: 'threadline' },
  { name: '@opentelemetry/instrumentation-undici', version: '0.33.0' },
  { name: 'scoped', version: '1.0.0', schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' },
  { name: 'attributed', attributes: { 'scope.kind': 'test', weight: 2 }, droppedAttributesCount: 3 },
];

const hex = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
// Short ASCII, any unicode, lone surrogates, and lengths across the one-, two- and three-byte varints.
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), loneSurrogate), { maxLength: 6 }).map((parts) => parts.join('')),
  fc.integer({ min: 100, max: 20_000 }).map((n) => 'é'.repeat(n % 7) + 'x'.repeat(n)),
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.maxSafeInteger(),
  fc.constantFrom(0, -1, 2 ** 32, -(2 ** 32) - 1, 2 ** 53, 2 ** 62, 2 ** 63, -(2 ** 63), 1.5, Number.NaN, Number.POSITIVE_INFINITY),
);
const attributeValue: fc.Arbitrary<AttributeValue> = fc.oneof(
  text,
  number,
  fc.boolean(),
  fc.array(fc.option(text, { nil: null }), { maxLength: 4 }) as fc.Arbitrary<AttributeValue>,
  fc.array(number, { maxLength: 4 }),
  fc.array(fc.boolean(), { maxLength: 3 }),
);
const attributes: fc.Arbitrary<Attributes> = fc.dictionary(text, attributeValue, { maxKeys: 8 });
const hrTime: fc.Arbitrary<HrTime> = fc.tuple(fc.integer({ min: 0, max: 18_000_000_000 }), fc.integer({ min: 0, max: 999_999_999 }));
const spanContext = fc.record(
  {
    traceId: hex(32),
    spanId: hex(16),
    traceFlags: fc.integer({ min: 0, max: 255 }),
    isRemote: fc.boolean(),
    traceState: fc.constantFrom(new TraceState('vendor=a1,other=b2'), new TraceState('')),
  },
  { requiredKeys: ['traceId', 'spanId', 'traceFlags'] },
);

const event: fc.Arbitrary<TimedEvent> = fc.record(
  { name: text, time: hrTime, attributes, droppedAttributesCount: fc.nat(5) },
  { requiredKeys: ['name', 'time'] },
);
const link: fc.Arbitrary<Link> = fc.record(
  { context: spanContext, attributes, droppedAttributesCount: fc.nat(5) },
  { requiredKeys: ['context'] },
);

const span: fc.Arbitrary<ReadableSpan> = fc
  .record({
    context: spanContext,
    parent: fc.option(spanContext, { nil: undefined }),
    name: text,
    kind: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    startTime: hrTime,
    endTime: hrTime,
    attributes,
    events: fc.array(event, { maxLength: 3 }),
    links: fc.array(link, { maxLength: 2 }),
    status: fc.record({ code: fc.integer({ min: 0, max: 2 }), message: fc.option(text, { nil: undefined }) }),
    dropped: fc.tuple(fc.nat(3), fc.nat(3), fc.nat(3)),
    resource: fc.constantFrom(...RESOURCES),
    scope: fc.constantFrom(...SCOPES),
  })
  .map(
    (s) =>
      ({
        spanContext: () => s.context,
        parentSpanContext: s.parent,
        name: s.name,
        kind: s.kind,
        startTime: s.startTime,
        endTime: s.endTime,
        attributes: s.attributes,
        events: s.events,
        links: s.links,
        status: s.status,
        droppedAttributesCount: s.dropped[0],
        droppedEventsCount: s.dropped[1],
        droppedLinksCount: s.dropped[2],
        resource: s.resource,
        instrumentationScope: s.scope,
        duration: [0, 0],
        ended: true,
      }) as unknown as ReadableSpan,
  );

describe('encodeTraceExportRequest', () => {
  it('writes the same bytes as otlp-transformer for any spans', () => {
    fc.assert(
      fc.property(fc.array(span, { maxLength: 12 }), (spans) => {
        expect(ourBytes(spans).equals(libraryBytes(spans))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('writes the same bytes for a batch larger than its first buffer guess', () => {
    const big = fc.sample(span, { numRuns: 600, seed: 7 });
    const bytes = ourBytes(big);
    expect(bytes.length).toBeGreaterThan(600 * 640);
    expect(bytes.equals(libraryBytes(big))).toBe(true);
  });

  it('writes an empty request for no spans', () => {
    expect(ourBytes([]).length).toBe(0);
    expect(libraryBytes([]).length).toBe(0);
  });
});
