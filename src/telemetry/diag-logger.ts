/**
 * OpenTelemetry's own warnings and errors (an export that failed, a collector that refused it)
 * in the gateway's log; without a diag logger the SDK drops them and a dead collector goes
 * unnoticed. Its messages may carry an endpoint URL: the logger's serializers redact them
 * (src/telemetry/log-secrets.ts), as every record's.
 */
import { diag, DiagLogLevel, type DiagLogFunction, type DiagLogger } from '@opentelemetry/api';
import type { Logger } from 'pino';

/** The `component` of OpenTelemetry's own records: stdout has them, the OTLP log export leaves them out. */
export const DIAG_COMPONENT = 'opentelemetry';

/** Registers `logger` as OTel's diag logger, warnings and errors only: the rest is SDK chatter. */
export function installDiagLogger(logger: Logger): void {
  diag.setLogger(pinoDiagLogger(logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}

/** Each diag call as one pino record at the matching level, marked as OpenTelemetry's. */
function pinoDiagLogger(logger: Logger): DiagLogger {
  const at =
    (level: 'error' | 'warn' | 'info' | 'debug' | 'trace'): DiagLogFunction =>
    (message, ...args) => {
      const error = args.find((arg): arg is Error => arg instanceof Error);
      // Scalars join the message; objects (an exporter's options, with its headers) are left out.
      const details = args.filter((arg) => ['string', 'number', 'boolean'].includes(typeof arg)).map(String);
      logger[level]({ component: DIAG_COMPONENT, ...(error === undefined ? {} : { err: error }) }, [message, ...details].join(' '));
    };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), verbose: at('trace') };
}
