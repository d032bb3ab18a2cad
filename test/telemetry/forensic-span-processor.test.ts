import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace, type Attributes, type Span } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ForensicSpanProcessor } from '../../src/telemetry/forensic-span-processor.js';
import { RedactSpanProcessor } from '../../src/telemetry/redact-span-processor.js';
import { pseudonymize } from '../../src/telemetry/session-attributes.js';
import { threadlineSampler } from '../../src/telemetry/threadline-sampler.js';

const KEY = 'forensic-span-processor-key-0123456789';

/** A provider whose sampler drops every trace (roots and deliveries still recorded), spans hmac-redacted, then the processor under test. */
function setup(sampler: NodeJS.ProcessEnv = { OTEL_TRACES_SAMPLER: 'always_off' }) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    sampler: threadlineSampler(sampler),
    spanProcessors: [new RedactSpanProcessor({ privacy: 'hmac', hmacKey: KEY }), new ForensicSpanProcessor(new SimpleSpanProcessor(exporter))],
  });
  const tracer = provider.getTracer('threadline');
  /** A gateway.deliver span under an unsampled turn, as the router starts it. */
  const deliver = (attributes: Attributes, work: (span: Span) => void = () => {}) => {
    const turn = tracer.startSpan('gateway.message', {}, ROOT_CONTEXT);
    const span = tracer.startSpan('gateway.deliver', { attributes }, trace.setSpan(ROOT_CONTEXT, turn));
    work(span);
    span.end();
    turn.end();
    return span;
  };
  return { exporter, tracer, deliver };
}

/** As the router's span has them: chat.id stamped already pseudonymized, the routing ids set raw and redacted at the end. */
const DELIVERY = {
  'delivery.id': 'm1/reply',
  'delivery.kind': 'reply',
  'delivery.attempt': 1,
  'delivery.target': 'origin',
  'chat.platform': 'webhook',
  'chat.id': pseudonymize('c1', KEY),
  'routing.destination.platform': 'webhook',
  'routing.destination.chat.id': 'c1',
};

describe('ForensicSpanProcessor', () => {
  it('exports a guard-flagged delivery of an unsampled trace as a forensic copy in a sampled trace of its own, linked to it', () => {
    const { exporter, deliver } = setup();
    const original = deliver(DELIVERY, (span) => {
      span.addEvent('routing.mismatch', { 'routing.origin.chat.id': 'c1', 'routing.destination.chat.id': 'c2' });
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'routing mismatch' });
    });
    const [copy, ...rest] = exporter.getFinishedSpans();
    expect(rest).toEqual([]);
    const ids = original.spanContext();
    expect(ids.traceFlags & TraceFlags.SAMPLED).toBe(0);
    expect(copy!.name).toBe('threadline.forensic');
    expect(copy!.spanContext().traceId).not.toBe(ids.traceId);
    expect(copy!.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(copy!.parentSpanContext).toBeUndefined();
    expect(copy!.links[0]).toEqual({ context: ids, attributes: { 'threadline.link': 'sampled out' } });
    expect(copy!.attributes).toMatchObject({
      'threadline.forensic.reason': 'misroute',
      'threadline.forensic.span_name': 'gateway.deliver',
      'threadline.forensic.trace_id': ids.traceId,
      'threadline.forensic.span_id': ids.spanId,
      'delivery.id': 'm1/reply',
    });
    expect(copy!.events.map((event) => event.name)).toEqual(['routing.mismatch']);
    expect(copy!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'routing mismatch' });
  });

  it('copies what the RedactSpanProcessor left, ids pseudonymized once', () => {
    const { exporter, deliver } = setup();
    deliver(DELIVERY, (span) => span.addEvent('routing.mismatch', { 'routing.origin.chat.id': 'c1' }));
    const [copy] = exporter.getFinishedSpans();
    expect(copy!.attributes['routing.destination.chat.id']).toBe(pseudonymize('c1', KEY));
    expect(copy!.events[0]!.attributes!['routing.origin.chat.id']).toBe(pseudonymize('c1', KEY));
  });

  it.each([
    ['an origin delivery bound elsewhere than its stamped chat', { 'routing.destination.chat.id': 'c2' }, () => {}, 'misroute'],
    ['a failed attempt', {}, (span: Span) => span.recordException(new Error('HTTP 400')), 'failed'],
    ['an attempt after a failed one', { 'delivery.attempt': 2 }, () => {}, 'retry'],
  ] as const)('keeps %s', (_what, attributes, work, reason) => {
    const { exporter, deliver } = setup();
    deliver({ ...DELIVERY, ...attributes }, work);
    expect(exporter.getFinishedSpans().map((span) => span.attributes['threadline.forensic.reason'])).toEqual([reason]);
  });

  it('keeps background work that failed before its delivery was recorded, by the delivery it names', () => {
    const { exporter, tracer } = setup();
    const notify = tracer.startSpan('terminal.notify', { root: true });
    notify.setAttributes({ 'delivery.id': 'proc:p1:done', 'delivery.kind': 'notification' });
    notify.setStatus({ code: SpanStatusCode.ERROR, message: 'no home channel' });
    notify.end();
    expect(exporter.getFinishedSpans().map((span) => span.attributes['threadline.forensic.span_name'])).toEqual(['terminal.notify']);
  });

  it('exports nothing of an unsampled trace that went as it should, or of a failure that names no delivery', () => {
    const { exporter, tracer, deliver } = setup();
    deliver(DELIVERY);
    const root = tracer.startSpan('gateway.message', {}, ROOT_CONTEXT);
    root.setStatus({ code: SpanStatusCode.ERROR });
    root.end();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('passes the spans of a sampled trace as they are, a misroute too', () => {
    const { exporter, deliver } = setup({ OTEL_TRACES_SAMPLER: 'always_on' });
    deliver(DELIVERY, (span) => span.addEvent('routing.mismatch'));
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(['gateway.deliver', 'gateway.message']);
  });
});
