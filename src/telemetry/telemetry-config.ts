import { join } from 'node:path';
import { envFlag, envInteger, envOneOf, envString } from '../env-vars.js';
import { VERSION } from '../version.js';
import { ConfigError } from '../errors.js';
import {
  DEFAULT_OUTBOUND_POLICY,
  OUTBOUND_KEYS,
  parseKeepBaggage,
  type HostRule,
  type KeepBaggage,
  type OutboundBaggagePolicy,
} from '../session/index.js';
import type { PrivacyMode, SessionAttributeOptions } from './session-attributes.js';

const MIB = 1024 * 1024;

export type TraceExporterKind = 'file' | 'otlp' | 'console' | 'none';
export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';
export type MetricsExporterKind = 'otlp' | 'prometheus' | 'console' | 'none';
/** OTEL_PROPAGATORS names threadline can install; threadline's session propagation is always on. */
export type PropagatorName = 'tracecontext' | 'baggage' | 'b3' | 'b3multi' | 'jaeger' | 'none';
export const PROPAGATOR_NAMES: readonly PropagatorName[] = ['tracecontext', 'baggage', 'b3', 'b3multi', 'jaeger', 'none'];

export interface MetricsConfig {
  readonly exporter: MetricsExporterKind;
  readonly otlpProtocol: OtlpProtocol;
  /** OTEL_EXPORTER_PROMETHEUS_HOST / _PORT: where the scrape endpoint listens. */
  readonly prometheusHost: string;
  readonly prometheusPort: number;
  /** OTEL_METRIC_EXPORT_INTERVAL: how often push exporters (otlp, console) export. */
  readonly exportIntervalMs: number;
}

/** Everything the telemetry bootstrap needs, read once from the environment at start-up. */
export interface TelemetryConfig {
  readonly serviceName: string;
  /** service.version and the tracer's version: package.json's. */
  readonly serviceVersion: string;
  readonly exporter: TraceExporterKind;
  readonly otlpProtocol: OtlpProtocol;
  readonly metrics: MetricsConfig;
  /** OTEL_PROPAGATORS, in order; default tracecontext,baggage. */
  readonly propagators: readonly PropagatorName[];
  readonly traceFile: string;
  /** The trace file is rotated before a write would take it past this size. */
  readonly traceFileMaxBytes: number;
  /** Trace files kept, the one being written included. */
  readonly traceFileKeep: number;
  /** gateway.reject spans recorded a second at most; the rest are counted, not recorded. */
  readonly rejectSpansPerSecond: number;
  readonly attributes: SessionAttributeOptions;
  readonly outboundBaggage: OutboundBaggagePolicy;
  readonly inboundBaggage: KeepBaggage;
  readonly logLevel: string;
  readonly logNames: boolean;
}

/**
 * Reads the configuration from `env`. Unknown values are refused with a ConfigError naming
 * the variable, so a typo cannot quietly turn tracing or privacy off.
 */
export function readTelemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const dataDir = env['THREADLINE_DATA_DIR'] || './data';
  const attributes = readSpanAttributeOptions(env);
  const logNames = envFlag(env, 'THREADLINE_LOG_NAMES');
  if (logNames && attributes.privacy !== 'plain') throw namesNeedPlainPrivacy(attributes.privacy!);
  return {
    serviceName: env['OTEL_SERVICE_NAME'] || 'threadline',
    serviceVersion: VERSION,
    exporter: exporterKind(env),
    otlpProtocol: otlpProtocol(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
    metrics: metricsConfig(env),
    propagators: propagators(env),
    traceFile: env['THREADLINE_TRACE_FILE'] || join(dataDir, 'traces.jsonl'),
    traceFileMaxBytes: envInteger(env, 'THREADLINE_TRACE_FILE_MAX_BYTES', 64 * MIB, 64 * 1024, 2 ** 40),
    traceFileKeep: envInteger(env, 'THREADLINE_TRACE_FILE_KEEP', 4, 1, 100),
    rejectSpansPerSecond: envInteger(env, 'THREADLINE_REJECT_SPANS_PER_SECOND', 10, 0, 1_000_000),
    attributes,
    outboundBaggage: {
      keys: keyList('THREADLINE_BAGGAGE_KEYS', env['THREADLINE_BAGGAGE_KEYS'] ?? DEFAULT_OUTBOUND_POLICY.keys.join(',')),
      hosts: hostRules(env),
    },
    inboundBaggage: parseKeepBaggage(env['THREADLINE_INBOUND_BAGGAGE']),
    logLevel: envOneOf(env, 'THREADLINE_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    logNames,
  };
}

/** As chat names on spans: a name would undo the pseudonyms of its chat. */
export function namesNeedPlainPrivacy(privacy: string): ConfigError {
  return new ConfigError('THREADLINE_LOG_NAMES', `names can only be logged in plain privacy mode, not ${privacy}`);
}

/** The span privacy setting; logs follow it too (see createLogger). */
export function readSpanAttributeOptions(env: NodeJS.ProcessEnv): SessionAttributeOptions {
  const hmacKey = env['THREADLINE_SPAN_HMAC_KEY'];
  return {
    privacy: envOneOf<PrivacyMode>(env, 'THREADLINE_SPAN_PRIVACY', ['plain', 'hmac', 'off'], 'plain'),
    includeChatName: envFlag(env, 'THREADLINE_SPAN_CHAT_NAME'),
    ...(hmacKey ? { hmacKey } : {}),
  };
}

/** The OTLP encoding: the signal's own variable, else the general one. */
function otlpProtocol(env: NodeJS.ProcessEnv, signalName: string): OtlpProtocol {
  const name = env[signalName] ? signalName : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  return envOneOf<OtlpProtocol>(env, name, ['http/protobuf', 'http/json', 'grpc'], 'http/protobuf');
}

/** Metrics go nowhere unless asked for, or an OTLP endpoint is set (as traces, which default to the file). */
function metricsConfig(env: NodeJS.ProcessEnv): MetricsConfig {
  const hasEndpoint = Boolean(env['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  const disabled = envFlag(env, 'OTEL_SDK_DISABLED');
  const exporter = envOneOf<MetricsExporterKind>(env, 'OTEL_METRICS_EXPORTER', ['otlp', 'prometheus', 'console', 'none'], hasEndpoint ? 'otlp' : 'none');
  return {
    exporter: disabled ? 'none' : exporter,
    otlpProtocol: otlpProtocol(env, 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL'),
    prometheusHost: envString(env, 'OTEL_EXPORTER_PROMETHEUS_HOST') ?? '127.0.0.1',
    prometheusPort: envInteger(env, 'OTEL_EXPORTER_PROMETHEUS_PORT', 9464, 0, 65535),
    exportIntervalMs: envInteger(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100, 86_400_000),
  };
}

/** OTEL_PROPAGATORS: a comma-separated list; `none` alone turns the standard ones off. */
function propagators(env: NodeJS.ProcessEnv): readonly PropagatorName[] {
  const name = 'OTEL_PROPAGATORS';
  const value = envString(env, name);
  if (value === undefined) return ['tracecontext', 'baggage'];
  const names = [...new Set(value.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== ''))];
  for (const entry of names) {
    if (!PROPAGATOR_NAMES.includes(entry as PropagatorName)) {
      throw new ConfigError(name, `"${entry}" is not one of ${PROPAGATOR_NAMES.join(', ')}`);
    }
  }
  if (names.includes('none') && names.length > 1) throw new ConfigError(name, '"none" cannot be combined with other propagators');
  return names as PropagatorName[];
}

/** OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER decide; with neither nor an endpoint, the local file. */
function exporterKind(env: NodeJS.ProcessEnv): TraceExporterKind {
  if (envFlag(env, 'OTEL_SDK_DISABLED')) return 'none';
  const hasEndpoint = Boolean(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  return envOneOf<TraceExporterKind>(env, 'OTEL_TRACES_EXPORTER', ['file', 'otlp', 'console', 'none'], hasEndpoint ? 'otlp' : 'file');
}

function keyList(name: string, value: string): readonly string[] {
  const keys = value.split(',').map((key) => key.trim()).filter((key) => key !== '');
  for (const key of keys) {
    if (!OUTBOUND_KEYS.includes(key)) {
      throw new ConfigError(name, `"${key}" cannot be sent as baggage; choose from ${OUTBOUND_KEYS.join(', ')}`);
    }
  }
  return keys;
}

/** THREADLINE_BAGGAGE_HOSTS="api.example.com=chat.id,session.id;*.internal=chat.platform,chat.id" */
function hostRules(env: NodeJS.ProcessEnv): HostRule[] {
  const name = 'THREADLINE_BAGGAGE_HOSTS';
  const value = env[name]?.trim();
  if (!value) return [];
  return value.split(';').filter((rule) => rule.trim() !== '').map((rule) => {
    const separator = rule.indexOf('=');
    const host = rule.slice(0, separator).trim().toLowerCase();
    if (separator < 0 || !/^(\*\.)?[a-z0-9.-]+$/.test(host)) {
      throw new ConfigError(name, `rule "${rule}" must read host=key,key (host may start with *.)`);
    }
    return { host, keys: keyList(name, rule.slice(separator + 1)) };
  });
}

