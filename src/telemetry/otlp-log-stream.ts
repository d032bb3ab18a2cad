import { SeverityNumber, type LogAttributes, type Logger as OtelLogger } from '@opentelemetry/api-logs';
import type { DestinationStream } from 'pino';
import { activeContext } from '../session/index.js';
import { DIAG_COMPONENT } from './diag-logger.js';

/** pino's numeric levels as OpenTelemetry severities (logs data model, "Mapping of SeverityNumber"). */
const SEVERITIES: ReadonlyArray<readonly [number, SeverityNumber, string]> = [
  [60, SeverityNumber.FATAL, 'FATAL'],
  [50, SeverityNumber.ERROR, 'ERROR'],
  [40, SeverityNumber.WARN, 'WARN'],
  [30, SeverityNumber.INFO, 'INFO'],
  [20, SeverityNumber.DEBUG, 'DEBUG'],
  [0, SeverityNumber.TRACE, 'TRACE'],
];

/** Fields of a pino line that become parts of the LogRecord, not attributes. */
const RECORD_FIELDS = new Set(['level', 'time', 'msg', 'trace_id', 'span_id', 'trace_flags']);

/**
 * A pino destination that emits each line as an OpenTelemetry LogRecord through `logger`.
 * It is handed the line pino has finished, after its serializers and redaction, so the
 * collector gets exactly what stdout gets; and it runs inside the logging call, so the
 * record is tied to the active span (trace_id, span_id) of the code that logged.
 * OpenTelemetry's own records (a failed export among them) stay on stdout: exported, each
 * failure would queue the record whose export fails next, for as long as the collector is down.
 */
export function otlpLogStream(logger: OtelLogger): DestinationStream {
  return {
    write(line: string): void {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        // pino writes JSON only; anything else is not ours to guess at.
        return;
      }
      if (record['component'] === DIAG_COMPONENT) return;
      const [severityNumber, severityText] = severityOf(record['level']);
      const attributes: LogAttributes = {};
      for (const [key, value] of Object.entries(record)) if (!RECORD_FIELDS.has(key)) attributes[key] = value as LogAttributes[string];
      logger.emit({
        ...(typeof record['time'] === 'number' ? { timestamp: record['time'] } : {}),
        severityNumber,
        severityText,
        ...(typeof record['msg'] === 'string' ? { body: record['msg'] } : {}),
        attributes,
        context: activeContext(),
      });
    },
  };
}

function severityOf(level: unknown): readonly [SeverityNumber, string] {
  const numeric = typeof level === 'number' ? level : 30;
  const [, severity, text] = SEVERITIES.find(([floor]) => numeric >= floor)!;
  return [severity, text];
}
