import { logsExporterEntries, readChoice, readFlag, readInteger, readText } from '../config/read-setting.js';
import { ConfigError } from '../errors.js';
import type { OtlpProtocol } from './telemetry-config.js';

/** What NodeSDK knows in OTEL_LOGS_EXPORTER; threadline exports with `otlp` alone. */
const LOGS_EXPORTERS = ['otlp', 'console', 'none'] as const;

/** Where log records go besides stdout, read once at start-up (OTEL_LOGS_EXPORTER and friends). */
export interface LogsConfig {
  /** `otlp`: each record is also exported as an OpenTelemetry log; `none`: stdout only. */
  readonly exporter: 'none' | 'otlp';
  /** Entries of OTEL_LOGS_EXPORTER left out, in words, for the log once there is one. */
  readonly warnings: readonly string[];
  readonly otlpProtocol: OtlpProtocol;
  /** OTEL_BLRP_*: the BatchLogRecordProcessor's settings. */
  readonly batch: {
    readonly scheduledDelayMillis: number;
    readonly exportTimeoutMillis: number;
    readonly maxQueueSize: number;
    readonly maxExportBatchSize: number;
  };
  /** OTEL_LOGRECORD_ATTRIBUTE_* (else OTEL_ATTRIBUTE_*): limits on each exported record. */
  readonly limits: { readonly attributeCountLimit: number; readonly attributeValueLengthLimit?: number };
}

/**
 * Reads what NodeSDK would read for logs (sdk-logs reads nothing itself), through the
 * settings table: a bad value stops start-up naming its variable.
 */
export function readLogsConfig(env: NodeJS.ProcessEnv): LogsConfig {
  const valueLength = wholeNumber(readText(env, 'OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT'));
  const exporter = logsExporter(env);
  return {
    // As traces and metrics: OTEL_SDK_DISABLED turns export off, stdout stays.
    ...(readFlag(env, 'OTEL_SDK_DISABLED') ? { exporter: 'none', warnings: [] } : exporter),
    otlpProtocol: readChoice(env, 'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL'),
    batch: {
      scheduledDelayMillis: readInteger(env, 'OTEL_BLRP_SCHEDULE_DELAY'),
      exportTimeoutMillis: readInteger(env, 'OTEL_BLRP_EXPORT_TIMEOUT'),
      maxQueueSize: readInteger(env, 'OTEL_BLRP_MAX_QUEUE_SIZE'),
      maxExportBatchSize: readInteger(env, 'OTEL_BLRP_MAX_EXPORT_BATCH_SIZE'),
    },
    limits: {
      attributeCountLimit: readInteger(env, 'OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT'),
      ...(valueLength === undefined ? {} : { attributeValueLengthLimit: valueLength }),
    },
  };
}

/**
 * OTEL_LOGS_EXPORTER as NodeSDK reads it, a comma-separated list: `none` anywhere turns
 * export off, `otlp` turns it on; `console` is left out with a warning, stdout having every
 * record already. An entry NodeSDK does not know either is refused as a typo.
 */
function logsExporter(env: NodeJS.ProcessEnv): Pick<LogsConfig, 'exporter' | 'warnings'> {
  const name = 'OTEL_LOGS_EXPORTER';
  const entries = logsExporterEntries(env);
  for (const entry of entries) {
    if (!(LOGS_EXPORTERS as readonly string[]).includes(entry)) throw new ConfigError(name, `"${entry}" is not one of ${LOGS_EXPORTERS.join(', ')}`);
  }
  if (entries.includes('none')) {
    const others = entries.filter((entry) => entry !== 'none');
    const warnings = others.length === 0 ? [] : [`${name} lists "none" with ${others.join(', ')}: no log is exported, as the OpenTelemetry SDK does`];
    return { exporter: 'none', warnings };
  }
  const warnings = entries.includes('console') ? [`${name} "console" is left out: every record is already written to stdout as JSON`] : [];
  return { exporter: entries.includes('otlp') ? 'otlp' : 'none', warnings };
}

/** A length limit as the SDK takes it: a whole number, else none (the SDK would warn and ignore it). */
function wholeNumber(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}
