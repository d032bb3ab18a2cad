import type { OtlpProtocol } from './telemetry-config.js';

export type OtlpSignal = 'traces' | 'metrics';

/**
 * The endpoint an OTLP exporter of `signal` resolves, as the exporters resolve it: the
 * signal's own variable, else the general one (HTTP appends the signal's path, gRPC takes
 * it as is), else the protocol's default on localhost.
 */
export function otlpEndpoint(signal: OtlpSignal, protocol: OtlpProtocol, env: NodeJS.ProcessEnv = process.env): string {
  const own = env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`]?.trim();
  if (own) return own;
  const general = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  if (protocol === 'grpc') return general || 'http://localhost:4317';
  return `${general ? general.replace(/\/+$/, '') : 'http://localhost:4318'}/v1/${signal}`;
}
