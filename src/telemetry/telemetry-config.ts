import { readInstanceId } from '../config/instance-id.js';
import { readChoice, readFlag, readInteger, readRedisUrl, readText, readUrl } from '../config/read-setting.js';
import { commaList } from '../env-vars.js';
import { VERSION } from '../version.js';
import { ConfigError } from '../errors.js';
import {
  OUTBOUND_KEYS,
  parseKeepBaggage,
  type HostRule,
  type KeepBaggage,
  type OutboundBaggagePolicy,
} from '../session/index.js';
import { checkSdkSettingValues } from './check-sdk-settings.js';
import { readLogsConfig, type LogsConfig } from './logs-config.js';
import { configuredSampler } from './threadline-sampler.js';
import { checkAttributeOptions, type PrivacyMode, type SessionAttributeOptions } from './session-attributes.js';

export type TraceExporterKind = 'file' | 'otlp' | 'console' | 'none';
export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';
type MetricsExporterKind = 'otlp' | 'prometheus' | 'console' | 'none';
/** OTEL_PROPAGATORS names threadline can install; threadline's session propagation is always on. */
export type PropagatorName = 'tracecontext' | 'baggage' | 'b3' | 'b3multi' | 'jaeger' | 'none';
const PROPAGATOR_NAMES: readonly PropagatorName[] = ['tracecontext', 'baggage', 'b3', 'b3multi', 'jaeger', 'none'];

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
  /** service.instance.id: THREADLINE_INSTANCE_ID when several instances share Redis, so a trace says which did what. */
  readonly serviceInstanceId?: string | undefined;
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
  /** OTEL_LOGS_EXPORTER and friends: log records over OTLP besides stdout. */
  readonly logs: LogsConfig;
}

/**
 * Reads the configuration from `env` through the settings table (src/config/settings.ts).
 * Unknown values are refused with a ConfigError naming the variable, so a typo cannot quietly
 * turn tracing or privacy off.
 */
export function readTelemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const attributes = readSpanAttributeOptions(env);
  const logNames = readFlag(env, 'THREADLINE_LOG_NAMES');
  if (logNames && attributes.privacy !== 'plain') throw namesNeedPlainPrivacy(attributes.privacy!);
  checkSdkSettings(env);
  return {
    serviceName: readText(env, 'OTEL_SERVICE_NAME'),
    serviceVersion: VERSION,
    serviceInstanceId: readRedisUrl(env, 'THREADLINE_REDIS_URL') === undefined ? undefined : readInstanceId(env),
    exporter: exporterKind(env),
    otlpProtocol: readChoice(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
    metrics: metricsConfig(env),
    propagators: propagators(env),
    traceFile: readText(env, 'THREADLINE_TRACE_FILE'),
    traceFileMaxBytes: readInteger(env, 'THREADLINE_TRACE_FILE_MAX_BYTES'),
    traceFileKeep: readInteger(env, 'THREADLINE_TRACE_FILE_KEEP'),
    rejectSpansPerSecond: readInteger(env, 'THREADLINE_REJECT_SPANS_PER_SECOND'),
    attributes,
    outboundBaggage: {
      keys: keyList('THREADLINE_BAGGAGE_KEYS', readText(env, 'THREADLINE_BAGGAGE_KEYS')),
      hosts: hostRules(env),
    },
    inboundBaggage: parseKeepBaggage(readText(env, 'THREADLINE_INBOUND_BAGGAGE')),
    logLevel: readChoice(env, 'THREADLINE_LOG_LEVEL'),
    logNames,
    logs: readLogsConfig(env),
  };
}

/** The exporters and the SDK read these themselves; read here too, so a bad value stops start-up like any other. */
function checkSdkSettings(env: NodeJS.ProcessEnv): void {
  readUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  readUrl(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  readUrl(env, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  readChoice(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  readInteger(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE');
  readInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE');
  checkSdkSettingValues(env);
  configuredSampler(env);
}

/** As chat names on spans: a name would undo the pseudonyms of its chat. */
export function namesNeedPlainPrivacy(privacy: string): ConfigError {
  return new ConfigError('THREADLINE_LOG_NAMES', `names can only be logged in plain privacy mode, not ${privacy}`);
}

/**
 * The span privacy setting, checked here so `threadline config`, `doctor` and start-up refuse
 * the same settings; logs follow it too (see createLogger).
 */
export function readSpanAttributeOptions(env: NodeJS.ProcessEnv): SessionAttributeOptions {
  const hmacKey = readText(env, 'THREADLINE_SPAN_HMAC_KEY');
  return checkAttributeOptions({
    privacy: readChoice(env, 'THREADLINE_SPAN_PRIVACY') satisfies PrivacyMode,
    includeChatName: readFlag(env, 'THREADLINE_SPAN_CHAT_NAME'),
    ...(hmacKey ? { hmacKey } : {}),
  });
}

/** Metrics go nowhere unless asked for, or an OTLP endpoint is set (as traces, which default to the file). */
function metricsConfig(env: NodeJS.ProcessEnv): MetricsConfig {
  const exporter = readChoice(env, 'OTEL_METRICS_EXPORTER');
  return {
    exporter: readFlag(env, 'OTEL_SDK_DISABLED') ? 'none' : exporter,
    otlpProtocol: readChoice(env, 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL'),
    prometheusHost: readText(env, 'OTEL_EXPORTER_PROMETHEUS_HOST'),
    prometheusPort: readInteger(env, 'OTEL_EXPORTER_PROMETHEUS_PORT'),
    exportIntervalMs: readInteger(env, 'OTEL_METRIC_EXPORT_INTERVAL'),
  };
}

/** OTEL_PROPAGATORS: a comma-separated list; `none` alone turns the standard ones off. */
function propagators(env: NodeJS.ProcessEnv): readonly PropagatorName[] {
  const name = 'OTEL_PROPAGATORS';
  const value = readText(env, name);
  const names = [...new Set(commaList(value.toLowerCase()))];
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
  if (readFlag(env, 'OTEL_SDK_DISABLED')) return 'none';
  return readChoice(env, 'OTEL_TRACES_EXPORTER');
}

function keyList(name: string, value: string): readonly string[] {
  const keys = commaList(value);
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
  const value = readText(env, name);
  if (value === undefined) return [];
  return value.split(';').filter((rule) => rule.trim() !== '').map((rule) => {
    const separator = rule.indexOf('=');
    const host = rule.slice(0, separator).trim().toLowerCase();
    if (separator < 0 || !/^(\*\.)?[a-z0-9.-]+$/.test(host)) {
      throw new ConfigError(name, `rule "${rule}" must read host=key,key (host may start with *.)`);
    }
    return { host, keys: keyList(name, rule.slice(separator + 1)) };
  });
}

