export { SessionSpanProcessor } from './session-span-processor.js';
export { SessionBaggagePropagator } from './session-baggage-propagator.js';
export { pseudonymize, type PrivacyMode, type SessionAttributeOptions } from './session-attributes.js';
export { FileSpanExporter } from './file-span-exporter.js';
export { createSpanExporter, describeExporter } from './create-span-exporter.js';
export { createPropagator, installContext } from './install-context.js';
export { readTelemetryConfig, type TelemetryConfig, type TraceExporterKind } from './telemetry-config.js';
export { startTelemetry, type Telemetry } from './start-telemetry.js';
export { createLogger, type LoggerOptions } from './logger.js';
