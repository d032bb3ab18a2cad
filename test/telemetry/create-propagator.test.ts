import { ROOT_CONTEXT, TraceFlags, defaultTextMapGetter, defaultTextMapSetter, propagation, trace, type Context } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTBOUND_POLICY, DESTINATION_HOST_KEY, contextWithSession, createSession, names } from '../../src/session/index.js';
import { createPropagator, readTelemetryConfig, type PropagatorName } from '../../src/telemetry/index.js';
import { DOCUMENTED_DEFAULT_KEYS, HOST_RULES } from '../helpers/baggage.js';
import { baggageRecord, parseBaggageHeader } from '../helpers/propagation.js';
import { FULL_SESSION, routingRecord } from '../helpers/sessions.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const session = createSession(FULL_SESSION);
/** A sampled span inside FULL_SESSION: what an instrumentation injects from. */
const inSession: Context = trace.setSpanContext(contextWithSession(ROOT_CONTEXT, FULL_SESSION), {
  traceId: TRACE_ID,
  spanId: SPAN_ID,
  traceFlags: TraceFlags.SAMPLED,
});
const DEFAULT_BAGGAGE = routingRecord(session, DOCUMENTED_DEFAULT_KEYS);

/** The headers threadline's propagator for OTEL_PROPAGATORS=`list` writes from `ctx`. */
function injected(list: string | undefined, ctx: Context = inSession): Record<string, string> {
  const config = readTelemetryConfig(list === undefined ? {} : { OTEL_PROPAGATORS: list });
  const carrier: Record<string, string> = {};
  createPropagator(config).inject(ctx, carrier, defaultTextMapSetter);
  return carrier;
}

function extracted(list: string, headers: Record<string, string>): Context {
  return createPropagator(readTelemetryConfig({ OTEL_PROPAGATORS: list })).extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

describe('createPropagator from OTEL_PROPAGATORS', () => {
  it('by default writes W3C trace context and the session baggage, nothing else', () => {
    const headers = injected(undefined);
    expect(Object.keys(headers).sort()).toEqual(['baggage', 'traceparent']);
    expect(headers['traceparent']).toBe(`00-${TRACE_ID}-${SPAN_ID}-01`);
    expect(parseBaggageHeader(headers['baggage'])).toEqual(DEFAULT_BAGGAGE);
    expect(injected('tracecontext,baggage')).toEqual(headers);
  });

  it('b3: one b3 header instead of traceparent, and the session baggage still', () => {
    const headers = injected('b3');
    expect(Object.keys(headers).sort()).toEqual(['b3', 'baggage']);
    expect(headers['b3']).toBe(`${TRACE_ID}-${SPAN_ID}-1`);
    expect(parseBaggageHeader(headers['baggage'])).toEqual(DEFAULT_BAGGAGE);
  });

  it('b3multi: the X-B3-* headers', () => {
    const headers = injected('b3multi');
    expect(headers).toMatchObject({ 'x-b3-traceid': TRACE_ID, 'x-b3-spanid': SPAN_ID, 'x-b3-sampled': '1' });
    expect(headers).not.toHaveProperty('traceparent');
    expect(parseBaggageHeader(headers['baggage'])).toEqual(DEFAULT_BAGGAGE);
  });

  it('jaeger: uber-trace-id, and no uberctx-* header that would carry the session past the host policy', () => {
    const headers = injected('jaeger');
    expect(Object.keys(headers).sort()).toEqual(['baggage', 'uber-trace-id']);
    expect(headers['uber-trace-id']).toBe(`${TRACE_ID}:${SPAN_ID}:0:01`);
  });

  it('none: only the session baggage, as its policy allows', () => {
    const headers = injected('none');
    expect(Object.keys(headers)).toEqual(['baggage']);
    expect(parseBaggageHeader(headers['baggage'])).toEqual(DEFAULT_BAGGAGE);
    expect(createPropagator(readTelemetryConfig({ OTEL_PROPAGATORS: 'none' })).fields()).toEqual(['baggage']);
  });

  it('several: each writes its headers', () => {
    const headers = injected('tracecontext,b3multi,jaeger');
    expect(headers).toMatchObject({ traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`, 'x-b3-traceid': TRACE_ID, 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:01` });
  });

  it.each<PropagatorName>(['b3', 'none', 'jaeger'])('%s keeps the outbound host policy of the session baggage', (list) => {
    const propagator = createPropagator({ outboundBaggage: HOST_RULES, inboundBaggage: false, propagators: [list] });
    const toHost = (host: string) => {
      const carrier: Record<string, string> = {};
      propagator.inject(inSession.setValue(DESTINATION_HOST_KEY, host), carrier, defaultTextMapSetter);
      return parseBaggageHeader(carrier['baggage']);
    };
    expect(toHost('api.example.com')).toEqual({ [names.CHAT_ID]: session.chatId });
    expect(toHost('db.internal')).toEqual({});
    expect(toHost('elsewhere.org')).toEqual(routingRecord(session, DEFAULT_OUTBOUND_POLICY.keys));
  });

  it('b3 and jaeger read their own trace headers inbound', () => {
    const b3 = trace.getSpanContext(extracted('b3', { b3: `${TRACE_ID}-${SPAN_ID}-1` }));
    expect(b3).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    const jaeger = trace.getSpanContext(extracted('jaeger', { 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:01` }));
    expect(jaeger).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    expect(trace.getSpanContext(extracted('b3', { traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` }))).toBeUndefined();
  });

  it("jaeger: an inbound uberctx-chat.id sets no baggage: a caller cannot pose as a chat that way", () => {
    const ctx = extracted('jaeger', { 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:01`, 'uberctx-chat.id': 'evil', 'uberctx-team': 'x' });
    expect(propagation.getBaggage(ctx)).toBeUndefined();
  });

  it.each<PropagatorName[]>([['b3'], ['none'], ['jaeger'], ['tracecontext', 'baggage']])(
    '%s: inbound baggage is filtered as ever, foreign kept as configured and session keys dropped',
    (...propagators) => {
      const propagator = createPropagator({ outboundBaggage: DEFAULT_OUTBOUND_POLICY, inboundBaggage: true, propagators });
      const ctx = propagator.extract(ROOT_CONTEXT, { baggage: 'chat.id=evil,user.id=u,team=blue' }, defaultTextMapGetter);
      expect(baggageRecord(ctx)).toEqual({ team: 'blue' });
    },
  );
});
