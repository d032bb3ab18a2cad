import { join } from 'node:path';
import { envFlag, envInteger, envOneOf } from '../env-vars.js';
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
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Everything the telemetry bootstrap needs, read once from the environment at start-up. */
export interface TelemetryConfig {
  readonly serviceName: string;
  readonly exporter: TraceExporterKind;
  readonly otlpProtocol: OtlpProtocol;
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
    exporter: exporterKind(env),
    otlpProtocol: otlpProtocol(env),
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

/** The OTLP encoding; gRPC gets a hint, since it is the usual first guess. */
function otlpProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const name = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  if (env[name]?.trim().toLowerCase() === 'grpc') {
    throw new ConfigError(name, '"grpc" is not one of http/protobuf, http/json (gRPC is not bundled; use http/protobuf against port 4318)');
  }
  return envOneOf<OtlpProtocol>(env, name, ['http/protobuf', 'http/json'], 'http/protobuf');
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

