import { ValueType } from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { prometheusUnit, withPrometheusNames } from '../../src/telemetry/prometheus-names.js';

describe('prometheusUnit', () => {
  it.each([
    ['s', false, 'seconds'],
    ['ms', false, 'milliseconds'],
    ['By', true, 'bytes'],
    ['By/s', false, 'bytes_per_second'],
    ['1/s', false, 'per_second'],
    ['{message}', false, ''],
    ['{message}/s', false, 'per_second'],
    ['', true, ''],
    ['1', true, 'ratio'],
    ['1', false, ''],
    ['m', true, 'meters'],
    ['widgets', false, 'widgets'],
  ])('spells %j (gauge: %s) as %j', (unit, gauge, expected) => {
    expect(prometheusUnit(unit, gauge)).toBe(expected);
  });
});

const TIME = [0, 0] as [number, number];

function metric(name: string, unit: string, type: 'counter' | 'gauge' | 'histogram'): MetricData {
  const descriptor = { name, unit, description: name, valueType: ValueType.DOUBLE };
  const point = { startTime: TIME, endTime: TIME, attributes: {} };
  if (type === 'histogram') {
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints: [{ ...point, value: { buckets: { boundaries: [1], counts: [1, 0] }, count: 1, sum: 0.5 } }],
    };
  }
  if (type === 'gauge') return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints: [{ ...point, value: 1 }] };
  return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.SUM, isMonotonic: true, dataPoints: [{ ...point, value: 1 }] };
}

function scrape(...metrics: MetricData[]): string {
  const collection: ResourceMetrics = { resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 'threadline' }, metrics }] };
  return new PrometheusSerializer(undefined, false, undefined, true, true).serialize(withPrometheusNames(collection));
}

describe('withPrometheusNames', () => {
  it('suffixes a histogram in seconds with _seconds before _bucket, _sum and _count', () => {
    const text = scrape(metric('threadline.turn.duration', 's', 'histogram'));
    expect(text).toContain('# TYPE threadline_turn_duration_seconds histogram');
    expect(text).toContain('# UNIT threadline_turn_duration_seconds seconds');
    expect(text).toMatch(/^threadline_turn_duration_seconds_bucket\{le="\+Inf"\} 1$/m);
    expect(text).toMatch(/^threadline_turn_duration_seconds_count 1$/m);
  });

  it('puts a counted unit before _total and gives the counter no # UNIT line', () => {
    const text = scrape(metric('nodejs.eventloop.time', 's', 'counter'));
    expect(text).toMatch(/^nodejs_eventloop_time_seconds_total 1$/m);
    expect(text).not.toContain('# UNIT');
  });

  it('adds nothing for an annotation such as {message}, and no # UNIT line OpenMetrics would reject', () => {
    const text = scrape(metric('threadline.messages.accepted', '{message}', 'counter'), metric('threadline.intake.queued', '{message}', 'gauge'));
    expect(text).toMatch(/^threadline_messages_accepted_total 1$/m);
    expect(text).toMatch(/^threadline_intake_queued 1$/m);
    expect(text).not.toContain('# UNIT');
  });

  it('spells a gauge of unit 1 as a ratio, bytes as bytes, and adds no unit a name already ends in', () => {
    const text = scrape(metric('nodejs.eventloop.utilization', '1', 'gauge'), metric('v8js.memory.heap.used', 'By', 'gauge'), metric('queue.wait_seconds', 's', 'gauge'));
    expect(text).toMatch(/^nodejs_eventloop_utilization_ratio 1$/m);
    expect(text).toMatch(/^v8js_memory_heap_used_bytes 1$/m);
    expect(text).toMatch(/^queue_wait_seconds 1$/m);
  });
});
