import { describe, expect, it } from 'vitest';
import { tracesFromJaegerJson } from '../../src/forensics/jaeger-json.js';
import { assertThreadlineError, thrownBy } from '../helpers/errors.js';

/**
 * Copied from jaegertracing/jaeger cmd/query/app/fixture/otlp2jaeger-out.json (commit
 * 43cf0ee5a7d8cd8f64cb3f1b866a2a80b335eba7): POST /api/transform's answer for one OTLP span.
 */
const TRANSFORM_FIXTURE = {
  data: [
    {
      traceID: '83a9efd15c1c98a977e0711cc93ee28b',
      spans: [
        {
          traceID: '83a9efd15c1c98a977e0711cc93ee28b',
          spanID: 'e127af99e3b3e074',
          operationName: 'okey-dokey-0',
          references: [{ refType: 'CHILD_OF', traceID: '83a9efd15c1c98a977e0711cc93ee28b', spanID: '909541b92cf05311' }],
          startTime: 1706678909209712,
          duration: 123,
          tags: [
            { key: 'otel.library.name', type: 'string', value: 'telemetrygen' },
            { key: 'net.peer.ip', type: 'string', value: '1.2.3.4' },
            { key: 'peer.service', type: 'string', value: 'telemetrygen-client' },
            { key: 'span.kind', type: 'string', value: 'server' },
          ],
          logs: [],
          processID: 'p1',
          warnings: null,
        },
      ],
      processes: { p1: { serviceName: 'telemetrygen', tags: [] } },
      warnings: null,
    },
  ],
  total: 0,
  limit: 0,
  offset: 0,
  errors: null,
};

/**
 * An errored delivery as the translator (collector-contrib pkg/translator/jaeger
 * traces_to_jaegerproto.go) writes one: a link as FOLLOWS_FROM, the status in tags, the
 * event's name in the log's `event` field; a trace id with zero high bits in 16 digits
 * (jaeger-idl model/v1/ids.go).
 */
const ERRORED_DELIVERY = {
  data: [
    {
      traceID: '00d269b633813fc6',
      spans: [
        {
          traceID: 'd269b633813fc6',
          spanID: 'eee19b7ec3c1b174',
          operationName: 'gateway.deliver',
          references: [
            { refType: 'CHILD_OF', traceID: '00d269b633813fc6', spanID: 'eee19b7ec3c1b173' },
            { refType: 'FOLLOWS_FROM', traceID: '0af7651916cd43dd8448eb211c80319c', spanID: '00ad6b7169203331' },
          ],
          startTime: 1706678909209712,
          duration: 1500,
          tags: [
            { key: 'otel.scope.name', type: 'string', value: 'threadline' },
            { key: 'chat.id', type: 'string', value: '42' },
            { key: 'delivery.attempt', type: 'int64', value: 2 },
            { key: 'big', type: 'int64', value: '9007199254740993' },
            { key: 'ratio', type: 'float64', value: 0.5 },
            { key: 'delivery.queued', type: 'bool', value: true },
            { key: 'blob', type: 'binary', value: 'AQID' },
            { key: 'span.kind', type: 'string', value: 'internal' },
            { key: 'otel.status_code', type: 'string', value: 'ERROR' },
            { key: 'error', type: 'bool', value: true },
            { key: 'otel.status_description', type: 'string', value: 'no route' },
          ],
          logs: [
            {
              timestamp: 1706678909210000,
              fields: [
                { key: 'event', type: 'string', value: 'routing.mismatch' },
                { key: 'routing.origin.chat.id', type: 'string', value: '42' },
              ],
            },
          ],
          processID: 'p1',
          warnings: null,
        },
        {
          traceID: '00d269b633813fc6',
          spanID: 'eee19b7ec3c1b173',
          operationName: 'cron.run',
          references: [{ refType: 'FOLLOWS_FROM', traceID: '00d269b633813fc6', spanID: 'eee19b7ec3c1b175' }],
          startTime: 1706678909209000,
          duration: 3000,
          tags: [{ key: 'error', type: 'bool', value: true }],
          logs: [],
          processID: 'p1',
          warnings: null,
        },
        {
          traceID: '00d269b633813fc6',
          spanID: 'eee19b7ec3c1b175',
          operationName: 'terminal.notify',
          references: [],
          startTime: 1706678909208000,
          duration: 10,
          tags: [{ key: 'otel.status_code', type: 'string', value: 'ERROR' }],
          logs: [{ timestamp: 1706678909208005, fields: [{ key: 'exit.code', type: 'int64', value: 1 }] }],
          processID: 'p1',
          warnings: null,
        },
        {
          traceID: '00d269b633813fc6',
          spanID: 'eee19b7ec3c1b176',
          operationName: 'terminal.progress',
          startTime: 1706678909208100,
          duration: 10,
          tags: [
            { key: 'otel.status_code', type: 'string', value: 'OK' },
            { key: 'error', type: 'bool', value: true },
          ],
          processID: 'p1',
        },
      ],
      processes: { p1: { serviceName: 'threadline', tags: [{ key: 'host.name', type: 'string', value: 'h' }] } },
      warnings: null,
    },
  ],
  total: 0,
  limit: 0,
  offset: 0,
  errors: null,
};

describe('tracesFromJaegerJson', () => {
  it("reads Jaeger's own fixture: ids, parent, times in ms, service, and no tags the translator made", () => {
    const [trace] = tracesFromJaegerJson(TRANSFORM_FIXTURE, 'jaeger http://j');
    expect(trace!.traceId).toBe('83a9efd15c1c98a977e0711cc93ee28b');
    expect(trace!.spans).toEqual([
      {
        traceId: '83a9efd15c1c98a977e0711cc93ee28b',
        spanId: 'e127af99e3b3e074',
        parentSpanId: '909541b92cf05311',
        name: 'okey-dokey-0',
        service: 'telemetrygen',
        startMs: 1706678909209.712,
        endMs: 1706678909209.835,
        attributes: { 'net.peer.ip': '1.2.3.4', 'peer.service': 'telemetrygen-client' },
        events: [],
        links: [],
        status: 'unset',
      },
    ]);
  });

  it('undoes the translator: padded ids, links, status, typed tags, events named by their `event` field', () => {
    const [trace] = tracesFromJaegerJson(ERRORED_DELIVERY, 'jaeger http://j');
    expect(trace!.traceId).toBe('000000000000000000d269b633813fc6');
    const [deliver, cron, notify, progress] = trace!.spans;
    expect(deliver).toEqual({
      traceId: '000000000000000000d269b633813fc6',
      spanId: 'eee19b7ec3c1b174',
      parentSpanId: 'eee19b7ec3c1b173',
      name: 'gateway.deliver',
      service: 'threadline',
      startMs: 1706678909209.712,
      endMs: 1706678909211.212,
      attributes: {
        'chat.id': '42',
        'delivery.attempt': 2,
        big: '9007199254740993',
        ratio: 0.5,
        'delivery.queued': true,
        blob: 'AQID',
      },
      events: [{ name: 'routing.mismatch', timeMs: 1706678909210, attributes: { 'routing.origin.chat.id': '42' } }],
      links: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '00ad6b7169203331' }],
      status: 'error',
      statusMessage: 'no route',
    });
    // Without otel.status_code the error tag alone says it; a FOLLOWS_FROM in the same trace is a link, not a parent.
    expect(cron).toMatchObject({ status: 'error', attributes: { error: true }, links: [{ spanId: 'eee19b7ec3c1b175' }] });
    expect(cron!.parentSpanId).toBeUndefined();
    // otel.status_code decides when present; a log without an `event` field is an event with no name.
    expect(notify).toMatchObject({ status: 'error', attributes: {}, events: [{ name: '', timeMs: 1706678909208.005, attributes: { 'exit.code': 1 } }] });
    expect(progress).toMatchObject({ status: 'ok', attributes: { error: true }, events: [], links: [] });
  });

  it('reads an empty search answer as no traces', () => {
    expect(tracesFromJaegerJson({ data: [], total: 0, limit: 0, offset: 0, errors: null }, 'jaeger http://j')).toEqual([]);
  });

  const malformed: [string, unknown, RegExp][] = [
    ['not an object', [1, 2], /not a JSON object/],
    ['an error envelope', { data: null, errors: [{ code: 500, msg: 'storage is down' }] }, /only errors: storage is down/],
    ['data not an array', { data: {} }, /"data" is an object/],
    ['a trace without spans', { data: [{ traceID: 'ab' }] }, /spans of data\[0\]/],
    ['a span id that is not hex', { data: [{ traceID: 'ab', spans: [{ traceID: 'ab', spanID: 'xyz', operationName: 'a', startTime: 1 }] }] }, /spanID/],
    ['a trace id too long', { data: [{ traceID: 'a'.repeat(33), spans: [] }] }, /traceID of data\[0\]/],
    ['a span without a name', { data: [{ traceID: 'ab', spans: [{ traceID: 'ab', spanID: 'cd', startTime: 1 }] }] }, /no operationName/],
    ['a start time as text', { data: [{ traceID: 'ab', spans: [{ traceID: 'ab', spanID: 'cd', operationName: 'a', startTime: '1' }] }] }, /startTime/],
    ['a tag of an unknown type', { data: [{ traceID: 'ab', spans: [{ traceID: 'ab', spanID: 'cd', operationName: 'a', startTime: 1, tags: [{ key: 'k', type: 'map', value: 1 }] }] }] }, /type "map"/],
  ];
  it.each(malformed)('refuses %s with TL_TRACE_SOURCE naming the source', (_, body, reason) => {
    const error = assertThreadlineError(thrownBy(() => tracesFromJaegerJson(body, 'jaeger http://j')), 'TL_TRACE_SOURCE');
    expect(error.message).toMatch(/^jaeger http:\/\/j answered with something that is not Jaeger traces: /);
    expect(error.message).toMatch(reason);
  });
});
