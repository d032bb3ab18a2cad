import { context, propagation, type TextMapPropagator } from '@opentelemetry/api';
import { createPropagator } from './create-propagator.js';
import { ThreadlineContextManager } from './threadline-context-manager.js';

/**
 * Registers the AsyncLocalStorage context manager and the propagators without any tracer
 * provider. Session routing needs both even with tracing off; the SDK registers neither
 * when OTEL_SDK_DISABLED is set. Returns false if another context manager was there first.
 */
export function installContext(propagator: TextMapPropagator = createPropagator()): boolean {
  const manager = new ThreadlineContextManager().enable();
  const installed = context.setGlobalContextManager(manager);
  if (installed) manager.adoptIfRegistered();
  propagation.setGlobalPropagator(propagator);
  return installed;
}
