import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { describeConfiguration } from '../../src/start/describe-settings.js';
import { readTelemetryConfig } from '../../src/telemetry/index.js';
import { configuredSampler } from '../../src/telemetry/threadline-sampler.js';
import { thrownBy } from '../helpers/errors.js';

/** Reading `env` fails with a ConfigError naming `variable`. */
function refusedVariable(env: NodeJS.ProcessEnv): string {
  const error = thrownBy(() => readTelemetryConfig(env));
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).variable;
}

describe('the OTEL_* settings the SDK reads itself', () => {
  // Each as the installed SDK reads it (node_modules/@opentelemetry): lower-cased and trimmed
  // (otlp-grpc-env-configuration.js), lower-cased (OTLPMetricExporterBase.js), any positive number
  // (shared-env-configuration.js, BatchSpanProcessor-shim.js).
  it.each([
    ['OTEL_EXPORTER_OTLP_INSECURE', 'TRUE'],
    ['OTEL_EXPORTER_OTLP_LOGS_INSECURE', ' True '],
    ['OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', 'DELTA'],
    ['OTEL_EXPORTER_OTLP_TIMEOUT', '15000.5'],
    ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', '7200000'],
    ['OTEL_BSP_SCHEDULE_DELAY', '2.5'],
    ['OTEL_BSP_EXPORT_TIMEOUT', '3600001'],
  ])('takes %s=%j, as the SDK does', (name, value) => {
    expect(() => readTelemetryConfig({ [name]: value })).not.toThrow();
    expect(describeConfiguration({ [name]: value }).errors).toEqual([]);
  });

  // Each of these the SDK would warn about and replace with its default, or misread.
  it.each([
    // Trimmed, then compared as written: GZIP is no compression to the SDK.
    ['OTEL_EXPORTER_OTLP_COMPRESSION', 'GZIP'],
    ['OTEL_EXPORTER_OTLP_LOGS_COMPRESSION', 'Gzip'],
    // Lower-cased but not trimmed: " delta" is cumulative to the SDK.
    ['OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', ' delta'],
    ['OTEL_EXPORTER_OTLP_INSECURE', 'yes'],
    ['OTEL_EXPORTER_OTLP_TIMEOUT', '0'],
    ['OTEL_EXPORTER_OTLP_METRICS_TIMEOUT', 'soon'],
    // Past Node's largest timer: it would fire at once.
    ['OTEL_EXPORTER_OTLP_TIMEOUT', '2147483648'],
    ['OTEL_BSP_SCHEDULE_DELAY', '-5'],
  ])('refuses %s=%j, naming it', (name, value) => {
    expect(refusedVariable({ [name]: value })).toBe(name);
  });

  it('reads OTEL_TRACES_SAMPLER one way: threadline builds the sampler, and config shows what it built', () => {
    const env = { OTEL_TRACES_SAMPLER: ' ALWAYS_OFF ' };
    expect(() => readTelemetryConfig(env)).not.toThrow();
    expect(configuredSampler(env).toString()).toBe('AlwaysOffSampler');
    const state = describeConfiguration(env);
    expect(state.errors).toEqual([]);
    expect(state.settings.find((setting) => setting.name === 'OTEL_TRACES_SAMPLER')).toMatchObject({ value: 'always_off', source: 'environment' });
  });

  it('leaves the logs endpoint alone while logs are not exported: a shared gRPC host:port is not refused', () => {
    const shared = { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'collector:4317' };
    expect(() => readTelemetryConfig(shared)).not.toThrow();
    const state = describeConfiguration(shared);
    expect(state.errors).toEqual([]);
    expect(state.settings.find((setting) => setting.name === 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT')).toMatchObject({ value: 'collector:4317', source: 'environment' });
    // Exported, it is checked as every endpoint is.
    for (const on of [{ OTEL_LOGS_EXPORTER: 'otlp' }, { OTEL_LOGS_EXPORTER: 'console, OTLP' }]) {
      expect(refusedVariable({ ...shared, ...on })).toBe('OTEL_EXPORTER_OTLP_LOGS_ENDPOINT');
      expect(describeConfiguration({ ...shared, ...on }).errors.map((error) => error.variable)).toEqual(['OTEL_EXPORTER_OTLP_LOGS_ENDPOINT']);
    }
    expect(() => readTelemetryConfig({ ...shared, OTEL_LOGS_EXPORTER: 'otlp,none' })).not.toThrow();
    expect(() => readTelemetryConfig({ ...shared, OTEL_LOGS_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).not.toThrow();
  });
});
