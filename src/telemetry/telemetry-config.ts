import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import {
  DEFAULT_OUTBOUND_POLICY,
  OUTBOUND_KEYS,
  type HostRule,
  type KeepBaggage,
  type OutboundBaggagePolicy,
} from '../session/index.js';
import type { PrivacyMode, SessionAttributeOptions } from './session-attributes.js';

export type TraceExporterKind = 'file' | 'otlp' | 'console' | 'none';
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Everything the telemetry bootstrap needs, read once from the environment at start-up. */
export interface TelemetryConfig {
  readonly serviceName: string;
  readonly exporter: TraceExporterKind;
  readonly otlpProtocol: OtlpProtocol;
  readonly traceFile: string;
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
  const privacy = oneOf(env, 'THREADLINE_SPAN_PRIVACY', ['plain', 'hmac', 'off'], 'plain') as PrivacyMode;
  const hmacKey = env['THREADLINE_SPAN_HMAC_KEY'];
  return {
    serviceName: env['OTEL_SERVICE_NAME'] || 'threadline',
    exporter: exporterKind(env),
    otlpProtocol: oneOf(
      env,
      env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL',
      ['http/protobuf', 'http/json'],
      'http/protobuf',
    ) as OtlpProtocol,
    traceFile: env['THREADLINE_TRACE_FILE'] || join(dataDir, 'traces.jsonl'),
    attributes: {
      privacy,
      includeChatName: flag(env, 'THREADLINE_SPAN_CHAT_NAME'),
      ...(hmacKey ? { hmacKey } : {}),
    },
    outboundBaggage: {
      keys: keyList('THREADLINE_BAGGAGE_KEYS', env['THREADLINE_BAGGAGE_KEYS'] ?? DEFAULT_OUTBOUND_POLICY.keys.join(',')),
      hosts: hostRules(env),
    },
    inboundBaggage: inboundBaggage(env['THREADLINE_INBOUND_BAGGAGE'] ?? 'none'),
    logLevel: oneOf(env, 'THREADLINE_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    logNames: flag(env, 'THREADLINE_LOG_NAMES'),
  };
}

/** OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER decide; with neither nor an endpoint, the local file. */
function exporterKind(env: NodeJS.ProcessEnv): TraceExporterKind {
  if (flag(env, 'OTEL_SDK_DISABLED')) return 'none';
  const hasEndpoint = Boolean(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  return oneOf(env, 'OTEL_TRACES_EXPORTER', ['file', 'otlp', 'console', 'none'], hasEndpoint ? 'otlp' : 'file') as TraceExporterKind;
}

function oneOf(env: NodeJS.ProcessEnv, name: string, allowed: readonly string[], fallback: string): string {
  const value = env[name]?.trim().toLowerCase();
  if (!value) return fallback;
  if (!allowed.includes(value)) {
    const hint = value === 'grpc' ? ' (gRPC is not bundled; use http/protobuf against port 4318)' : '';
    throw new ConfigError(name, `"${value}" is not one of ${allowed.join(', ')}${hint}`);
  }
  return value;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  return oneOf(env, name, ['1', '0', 'true', 'false'], 'false').match(/^(1|true)$/) !== null;
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

function inboundBaggage(value: string): KeepBaggage {
  const trimmed = value.trim();
  if (trimmed === 'none' || trimmed === '') return false;
  if (trimmed === 'all') return true;
  return trimmed.split(',').map((key) => key.trim()).filter((key) => key !== '');
}
