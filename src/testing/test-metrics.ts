import { metrics, type Attributes } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/** One series as collected: a counter's or gauge's value, or a histogram's count and sum. */
export interface MetricPoint {
  readonly name: string;
  readonly attributes: Attributes;
  /** A counter's total, a gauge's last value, or how many values a histogram recorded. */
  readonly value: number;
  /** A histogram's sum of recorded values. */
  readonly sum?: number | undefined;
}

/** The process's metrics at one collection. */
export interface CollectedMetrics {
  readonly points: readonly MetricPoint[];
  /** The sum of `value` over the points of `name` whose attributes include every one of `attributes`; 0 when none. */
  value(name: string, attributes?: Attributes): number;
}

export interface TestMetrics {
  /** Collects every instrument now, observable gauges included. */
  collect(): Promise<CollectedMetrics>;
}

/** A reader that exports nothing: collect() is all a test needs. */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }

  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

let installed: TestMetrics | undefined;

/**
 * Registers, once per process, a meter provider whose metrics are collected on demand, so
 * gateways built afterwards record. Once, as installTestTelemetry: instruments made on one
 * provider stay with it. When another meter provider was registered first (startMetrics, or
 * the application's own), threadline's metrics go there and collect() says so.
 */
export function installTestMetrics(): TestMetrics {
  if (installed !== undefined) return installed;
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  const registered = metrics.setGlobalMeterProvider(provider);
  installed = {
    collect: async () => {
      if (!registered) {
        throw new Error('Another meter provider was registered before the test one; read threadline metrics from its exporter instead');
      }
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
      return collected(resourceMetrics);
    },
  };
  return installed;
}

function collected(resourceMetrics: ResourceMetrics): CollectedMetrics {
  const points: MetricPoint[] = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      const { name } = metric.descriptor;
      if (metric.dataPointType === DataPointType.HISTOGRAM) {
        for (const point of metric.dataPoints) points.push({ name, attributes: point.attributes, value: point.value.count, sum: point.value.sum });
      } else if (metric.dataPointType === DataPointType.SUM || metric.dataPointType === DataPointType.GAUGE) {
        for (const point of metric.dataPoints) points.push({ name, attributes: point.attributes, value: point.value });
      }
    }
  }
  return {
    points,
    value: (name, attributes = {}) =>
      points
        .filter((point) => point.name === name && Object.entries(attributes).every(([key, wanted]) => point.attributes[key] === wanted))
        .reduce((total, point) => total + point.value, 0),
  };
}
