import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type SpanContext } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { threadlineSampler } from '../../src/telemetry/threadline-sampler.js';

/** The 1% ratio keeps this trace id (its four 32-bit words XOR to 1) and drops the other. */
const KEPT = '00000000000000000000000000000001';
const DROPPED = 'ffffffff000000000000000000000000';
const RATIO = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' };

function under(parent: Partial<SpanContext> & { traceId: string }) {
  return trace.setSpanContext(ROOT_CONTEXT, { spanId: '00000000000000a1', traceFlags: TraceFlags.NONE, isRemote: false, ...parent });
}

function decide(env: NodeJS.ProcessEnv, traceId: string, name = 'gateway.message', context = ROOT_CONTEXT) {
  return threadlineSampler(env).shouldSample(context, traceId, name, SpanKind.SERVER, {}, []).decision;
}

describe('threadlineSampler', () => {
  it.each([
    ['the default', {}],
    ['parentbased_always_on', { OTEL_TRACES_SAMPLER: 'parentbased_always_on' }],
  ])("with %s, samples a span whose remote parent says -00: a caller cannot switch the gateway's spans off", (_name, env) => {
    const caller = under({ traceId: KEPT, isRemote: true, traceFlags: TraceFlags.NONE });
    expect(decide(env, KEPT, 'gateway.message', caller)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });

  it('with a ratio, lets the ratio decide on the trace id whatever a remote parent says', () => {
    expect(decide(RATIO, KEPT, 'gateway.message', under({ traceId: KEPT, isRemote: true, traceFlags: TraceFlags.NONE }))).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(RATIO, DROPPED, 'gateway.message', under({ traceId: DROPPED, isRemote: true, traceFlags: TraceFlags.SAMPLED }))).toBe(SamplingDecision.NOT_RECORD);
  });

  it('follows a local parent, as parent-based sampling does, so a trace is kept or dropped whole', () => {
    expect(decide(RATIO, DROPPED, 'tool.call', under({ traceId: DROPPED, traceFlags: TraceFlags.SAMPLED }))).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(RATIO, KEPT, 'tool.call', under({ traceId: KEPT, traceFlags: TraceFlags.NONE }))).toBe(SamplingDecision.NOT_RECORD);
  });

  it('records, without sampling, the roots and deliveries it drops, so their outcome can be judged at their end', () => {
    expect(decide(RATIO, DROPPED, 'cron.run')).toBe(SamplingDecision.RECORD);
    expect(decide(RATIO, KEPT, 'gateway.deliver', under({ traceId: KEPT, traceFlags: TraceFlags.NONE }))).toBe(SamplingDecision.RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_off' }, KEPT, 'gateway.deliver', under({ traceId: KEPT, traceFlags: TraceFlags.SAMPLED }))).toBe(SamplingDecision.RECORD);
    expect(decide(RATIO, KEPT, 'cron.run')).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });

  it('takes a ratio of 1 when OTEL_TRACES_SAMPLER_ARG is unset, as the SDK does', () => {
    expect(decide({ OTEL_TRACES_SAMPLER: 'traceidratio' }, DROPPED)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });

  it.each([
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER'],
    [{ ...RATIO, OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG'],
    [{ ...RATIO, OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG'],
  ])('refuses %o with a ConfigError naming %s', (env, variable) => {
    expect(() => threadlineSampler(env)).toThrow(ConfigError);
    expect(() => threadlineSampler(env)).toThrow(variable);
  });
});
