import { readChoice, readFlag, readInteger, readText } from '../config/read-setting.js';
import type { OtlpProtocol } from './telemetry-config.js';

/** Where log records go besides stdout, read once at start-up (OTEL_LOGS_EXPORTER and friends). */
export interface LogsConfig {
  /** `otlp`: each record is also exported as an OpenTelemetry log; `none`: stdout only. */
  readonly exporter: 'none' | 'otlp';
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
  return {
    // As traces and metrics: OTEL_SDK_DISABLED turns export off, stdout stays.
    exporter: readFlag(env, 'OTEL_SDK_DISABLED') ? 'none' : readChoice(env, 'OTEL_LOGS_EXPORTER'),
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

/** A length limit as the SDK takes it: a whole number, else none (the SDK would warn and ignore it). */
function wholeNumber(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}
