/**
 * Typed reads of the settings table: each takes the kind, default and bounds from SETTINGS,
 * so a reader cannot disagree with what `threadline config` and the docs say.
 */
import { join } from 'node:path';
import { commaList, envFlag, envInteger, envNumber, envOneOf, envString, envUrl } from '../env-vars.js';
import { parseRedisUrl } from './redis-url.js';
import { SETTINGS, type Setting, type SettingName } from './settings.js';

type Table = typeof SETTINGS;
type NameOfKind<K extends Setting['kind']> = { [N in SettingName]: Table[N]['kind'] extends K ? N : never }[SettingName];
type ChoiceOf<N extends NameOfKind<'choice'>> = Table[N]['choices'][number];
/** A string when the setting always has a value (a default, or one computed from others). */
type TextOf<N extends SettingName> = Table[N] extends { default: string }
  ? string
  : N extends keyof typeof COMPUTED_DEFAULTS
    ? ReturnType<(typeof COMPUTED_DEFAULTS)[N]> extends string
      ? string
      : string | undefined
    : string | undefined;

/**
 * Defaults computed from other settings, which the table's `defaultText` says in words; here
 * beside the readers they call, so the table imports none of them.
 */
const COMPUTED_DEFAULTS = {
  THREADLINE_HTTP_HEADERS_TIMEOUT_MS: (env: NodeJS.ProcessEnv): number => Math.min(10_000, readInteger(env, 'THREADLINE_HTTP_REQUEST_TIMEOUT_MS')),
  OTEL_TRACES_EXPORTER: (env: NodeJS.ProcessEnv): string => (hasEndpoint(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ? 'otlp' : 'file'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: (env: NodeJS.ProcessEnv): string => readChoice(env, 'OTEL_EXPORTER_OTLP_PROTOCOL'),
  THREADLINE_TRACE_FILE: (env: NodeJS.ProcessEnv): string => join(readText(env, 'THREADLINE_DATA_DIR'), 'traces.jsonl'),
  OTEL_METRICS_EXPORTER: (env: NodeJS.ProcessEnv): string => (hasEndpoint(env, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') ? 'otlp' : 'none'),
  OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: (env: NodeJS.ProcessEnv): string => readChoice(env, 'OTEL_EXPORTER_OTLP_PROTOCOL'),
  OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: (env: NodeJS.ProcessEnv): string => readChoice(env, 'OTEL_EXPORTER_OTLP_PROTOCOL'),
  ...sharedOtlpDefaults('TRACES'),
  ...sharedOtlpDefaults('METRICS'),
  ...sharedOtlpDefaults('LOGS'),
  OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: (env: NodeJS.ProcessEnv): number => readInteger(env, 'OTEL_ATTRIBUTE_COUNT_LIMIT'),
  OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT: (env: NodeJS.ProcessEnv): number => readInteger(env, 'OTEL_ATTRIBUTE_COUNT_LIMIT'),
  OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: (env: NodeJS.ProcessEnv): string | undefined => readText(env, 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'),
  OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT: (env: NodeJS.ProcessEnv): string | undefined => readText(env, 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'),
} satisfies { [N in SettingName]?: (env: NodeJS.ProcessEnv) => string | number | undefined };

/** A signal's own OTLP exporter settings, read as the shared ones when unset (as the SDK reads them). */
function sharedOtlpDefaults<S extends 'TRACES' | 'METRICS' | 'LOGS'>(
  signal: S,
): { readonly [P in 'TIMEOUT' as `OTEL_EXPORTER_OTLP_${S}_${P}`]: (env: NodeJS.ProcessEnv) => number } & {
  readonly [P in 'COMPRESSION' | 'INSECURE' as `OTEL_EXPORTER_OTLP_${S}_${P}`]: (env: NodeJS.ProcessEnv) => string;
} & { readonly [P in 'CERTIFICATE' | 'CLIENT_CERTIFICATE' | 'CLIENT_KEY' as `OTEL_EXPORTER_OTLP_${S}_${P}`]: (env: NodeJS.ProcessEnv) => string | undefined } {
  const name = (part: string): string => `OTEL_EXPORTER_OTLP_${signal}_${part}`;
  return {
    [name('TIMEOUT')]: (env: NodeJS.ProcessEnv): number => readInteger(env, 'OTEL_EXPORTER_OTLP_TIMEOUT'),
    [name('COMPRESSION')]: (env: NodeJS.ProcessEnv): string => readChoice(env, 'OTEL_EXPORTER_OTLP_COMPRESSION'),
    [name('INSECURE')]: (env: NodeJS.ProcessEnv): string => readChoice(env, 'OTEL_EXPORTER_OTLP_INSECURE'),
    [name('CERTIFICATE')]: (env: NodeJS.ProcessEnv): string | undefined => readText(env, 'OTEL_EXPORTER_OTLP_CERTIFICATE'),
    [name('CLIENT_CERTIFICATE')]: (env: NodeJS.ProcessEnv): string | undefined => readText(env, 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE'),
    [name('CLIENT_KEY')]: (env: NodeJS.ProcessEnv): string | undefined => readText(env, 'OTEL_EXPORTER_OTLP_CLIENT_KEY'),
  } as never;
}

/**
 * URL settings that matter only while their signal is exported: otherwise their value is left
 * as it is, so a shared one meant for other services (a gRPC `host:port`) cannot stop start-up.
 */
const UNUSED_WHEN = {
  OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: (env: NodeJS.ProcessEnv): boolean => !logsOverOtlp(env),
} satisfies { [N in NameOfKind<'url'>]?: (env: NodeJS.ProcessEnv) => boolean };

/** OTEL_LOGS_EXPORTER's entries, lower case, each once (src/telemetry/logs-config.ts says what they do). */
export function logsExporterEntries(env: NodeJS.ProcessEnv): string[] {
  return [...new Set(commaList(readText(env, 'OTEL_LOGS_EXPORTER').toLowerCase()))];
}

/** Logs go to the collector: `otlp` listed, `none` not (as NodeSDK reads it), and the SDK not disabled. */
function logsOverOtlp(env: NodeJS.ProcessEnv): boolean {
  const entries = logsExporterEntries(env);
  return entries.includes('otlp') && !entries.includes('none') && !readFlag(env, 'OTEL_SDK_DISABLED');
}

/** An OTLP endpoint variable is set: then traces (and metrics) default to OTLP. */
function hasEndpoint(env: NodeJS.ProcessEnv, signalVariable: string): boolean {
  return envString(env, signalVariable) !== undefined || envString(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
}

/** The computed default of `name`, if it has one. */
function computedDefault(name: SettingName): ((env: NodeJS.ProcessEnv) => string | number | undefined) | undefined {
  return Object.hasOwn(COMPUTED_DEFAULTS, name) ? COMPUTED_DEFAULTS[name as keyof typeof COMPUTED_DEFAULTS] : undefined;
}

function setting(name: SettingName): Setting {
  return SETTINGS[name];
}

export function readInteger(env: NodeJS.ProcessEnv, name: NameOfKind<'integer'>): number {
  const { min, max, default: fallback, fractional } = setting(name) as Extract<Setting, { kind: 'integer' }>;
  const computed = computedDefault(name);
  const fromOthers = computed !== undefined && envString(env, name) === undefined;
  return (fractional ? envNumber : envInteger)(env, name, fromOthers ? (computed(env) as number) : fallback, min, max);
}

export function readFlag(env: NodeJS.ProcessEnv, name: NameOfKind<'flag'>): boolean {
  return envFlag(env, name, (setting(name) as Extract<Setting, { kind: 'flag' }>).default);
}

export function readChoice<N extends NameOfKind<'choice'>>(env: NodeJS.ProcessEnv, name: N): ChoiceOf<N> {
  const { choices, default: fallback } = setting(name) as Extract<Setting, { kind: 'choice' }>;
  const computed = computedDefault(name);
  if (envString(env, name) === undefined && computed !== undefined) {
    // A computed default comes from another setting, which reports its own bad value.
    return computed(env) as ChoiceOf<N>;
  }
  return envOneOf(env, name, choices, fallback) as ChoiceOf<N>;
}

/** The value as set (trimmed, unless the setting says otherwise), else its default. */
export function readText<N extends NameOfKind<'text'>>(env: NodeJS.ProcessEnv, name: N): TextOf<N> {
  const text = setting(name) as Extract<Setting, { kind: 'text' | 'url' }>;
  const raw = env[name];
  if (raw !== undefined && text.emptyIsValue && raw.trim() === '') return '' as TextOf<N>;
  const value = text.untrimmed ? (raw === '' ? undefined : raw) : envString(env, name);
  return (value ?? computedDefault(name)?.(env) ?? text.default) as TextOf<N>;
}

/** An http(s) URL as set, else its default; a malformed one is refused without echoing it (unchecked where unused). */
export function readUrl<N extends NameOfKind<'url'>>(env: NodeJS.ProcessEnv, name: N): TextOf<N> {
  const url = setting(name) as Extract<Setting, { kind: 'text' | 'url' }>;
  if (Object.hasOwn(UNUSED_WHEN, name) && UNUSED_WHEN[name as keyof typeof UNUSED_WHEN](env)) return envString(env, name) as TextOf<N>;
  return (envUrl(env, name) ?? computedDefault(name)?.(env) ?? url.default) as TextOf<N>;
}

/** A redis:// or rediss:// URL as set, else its default; a malformed one is refused without echoing it. */
export function readRedisUrl<N extends NameOfKind<'redis-url'>>(env: NodeJS.ProcessEnv, name: N): TextOf<N> {
  const value = envString(env, name);
  const url = setting(name) as Extract<Setting, { kind: 'redis-url' }>;
  return (value === undefined ? url.default : parseRedisUrl(name, value)) as TextOf<N>;
}

/** Whether the environment gives the setting a value, or it takes its default. */
export function isSet(env: NodeJS.ProcessEnv, name: SettingName): boolean {
  const raw = env[name];
  if (raw === undefined) return false;
  const entry = setting(name);
  if (entry.kind === 'text' && entry.emptyIsValue) return true;
  if (entry.kind === 'text' && entry.untrimmed) return raw !== '';
  return raw.trim() !== '';
}
