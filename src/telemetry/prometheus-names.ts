import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/**
 * UCUM units as Prometheus spells them (OpenTelemetry's Prometheus and OpenMetrics
 * compatibility specification); a unit not listed is kept as its letters and digits.
 */
const PROMETHEUS_UNITS: Readonly<Record<string, string>> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  bit: 'bits',
  Hz: 'hertz',
  Cel: 'celsius',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  m: 'meters',
  '%': 'percent',
};

const PER_UNITS: Readonly<Record<string, string>> = { s: 'second', min: 'minute', h: 'hour', d: 'day', w: 'week', mo: 'month', y: 'year' };

/** Whether the metric is a Prometheus counter: its name ends in `_total` and takes no `# UNIT` line. */
function isCounter(metric: MetricData): boolean {
  return metric.dataPointType === DataPointType.SUM && metric.isMonotonic;
}

/**
 * The Prometheus unit of a UCUM `unit`: `s` is `seconds`, `By` is `bytes`, `By/s` is
 * `bytes_per_second`, an annotation (`{message}`) is no unit, and `1` is `ratio` for a gauge
 * only (a count of a ratio means nothing). '' when the name takes no unit suffix.
 */
export function prometheusUnit(unit: string, gauge: boolean): string {
  const plain = unit.replace(/\{[^}]*\}/g, '').trim();
  if (plain === '') return '';
  if (plain === '1') return gauge ? 'ratio' : '';
  const [per, under] = plain.split('/', 2) as [string, string | undefined];
  const word = (part: string, table: Readonly<Record<string, string>>) => table[part] ?? part.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '');
  const head = per === '' || per === '1' ? '' : word(per, PROMETHEUS_UNITS);
  if (under === undefined || under === '') return head;
  const tail = word(under, PER_UNITS);
  return head === '' ? `per_${tail}` : `${head}_per_${tail}`;
}

/**
 * The collection with each metric named as Prometheus wants it: its unit a suffix of its
 * name (`threadline.turn.duration` in `s` is scraped as `threadline_turn_duration_seconds`,
 * before the `_total`, `_bucket` the serializer adds), and a unit only where it is that
 * suffix, so no `# UNIT` line disagrees with its name as OpenMetrics requires.
 */
export function withPrometheusNames(collection: ResourceMetrics): ResourceMetrics {
  return {
    resource: collection.resource,
    scopeMetrics: collection.scopeMetrics.map((scope) => ({
      ...scope,
      metrics: scope.metrics.map((metric) => {
        const gauge = metric.dataPointType === DataPointType.GAUGE || (metric.dataPointType === DataPointType.SUM && !metric.isMonotonic);
        const unit = prometheusUnit(metric.descriptor.unit, gauge);
        const snake = metric.descriptor.name.replace(/[^A-Za-z0-9_]/g, '_');
        const name = unit === '' || snake.endsWith(`_${unit}`) ? metric.descriptor.name : `${metric.descriptor.name}_${unit}`;
        return { ...metric, descriptor: { ...metric.descriptor, name, unit: isCounter(metric) ? '' : unit } } as MetricData;
      }),
    })),
  };
}
