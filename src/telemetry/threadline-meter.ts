import { metrics, type Meter } from '@opentelemetry/api';
import { VERSION } from '../version.js';

/**
 * threadline's meter, from the meter provider registered now (a meter taken before
 * registration stays a no-op). One scope for every instrument: two scopes would export one
 * counter twice, which strict Prometheus parsers refuse.
 */
export function threadlineMeter(): Meter {
  return metrics.getMeter('threadline', VERSION);
}
