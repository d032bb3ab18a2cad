import { trace, type Tracer } from '@opentelemetry/api';
import { VERSION } from '../version.js';

/** threadline's tracer, named and versioned as its instrumentation scope. */
export function threadlineTracer(): Tracer {
  return trace.getTracer('threadline', VERSION);
}
