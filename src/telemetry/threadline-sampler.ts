import { isSpanContextValid, trace, type Attributes, type Context, type Link, type SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace-base';
import { readChoice, readText } from '../config/read-setting.js';
import { ConfigError } from '../errors.js';

type SamplerName = ReturnType<typeof readChoice<'OTEL_TRACES_SAMPLER'>>;

/** The span whose outcome decides whether a delivery went astray or failed. */
const DELIVER_SPAN = 'gateway.deliver';

/**
 * The head sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, as the SDK builds it,
 * with two changes:
 * - a remote parent (a caller's traceparent, trusted) never decides: the gateway's own root
 *   sampler does, on the same trace id, so a caller's `-00` cannot switch off threadline's
 *   spans (nor its `-01` force every one of them on);
 * - a root span, or a gateway.deliver span, the sampler would drop is recorded but not
 *   sampled, so the ForensicSpanProcessor can judge its outcome when it ends (a misroute, a
 *   failure) and export a copy of it; nothing of an unsampled trace is exported otherwise.
 */
export function threadlineSampler(env: NodeJS.ProcessEnv = process.env): Sampler {
  return new RecordOutcomes(configuredSampler(env));
}

/** OTEL_TRACES_SAMPLER (default parentbased_always_on) with remote parents left to the root sampler. */
export function configuredSampler(env: NodeJS.ProcessEnv): Sampler {
  const name = readChoice(env, 'OTEL_TRACES_SAMPLER');
  const root = rootSampler(name, env);
  if (!name.startsWith('parentbased_')) return root;
  return new ParentBasedSampler({ root, remoteParentSampled: root, remoteParentNotSampled: root });
}

function rootSampler(name: SamplerName, env: NodeJS.ProcessEnv): Sampler {
  if (name.endsWith('always_on')) return new AlwaysOnSampler();
  if (name.endsWith('always_off')) return new AlwaysOffSampler();
  return new TraceIdRatioBasedSampler(samplerRatio(env));
}

/** OTEL_TRACES_SAMPLER_ARG: a ratio in [0, 1]; 1 when unset, as the SDK reads it. */
function samplerRatio(env: NodeJS.ProcessEnv): number {
  const value = readText(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (value === undefined) return 1;
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError('OTEL_TRACES_SAMPLER_ARG', `"${value}" is not a ratio between 0 and 1`);
  }
  return ratio;
}

/** Keeps the delegate's decision, except that roots and deliveries it drops are still recorded. */
class RecordOutcomes implements Sampler {
  constructor(private readonly delegate: Sampler) {}

  shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    const result = this.delegate.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    if (result.decision !== SamplingDecision.NOT_RECORD) return result;
    const parent = trace.getSpanContext(context);
    const isRoot = parent === undefined || !isSpanContextValid(parent);
    return isRoot || spanName === DELIVER_SPAN ? { ...result, decision: SamplingDecision.RECORD } : result;
  }

  toString(): string {
    return `ThreadlineSampler{${this.delegate.toString()}}`;
  }
}
