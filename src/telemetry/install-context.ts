import { ROOT_CONTEXT, context, createContextKey, propagation, type TextMapPropagator } from '@opentelemetry/api';
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

const PROBE = createContextKey('threadline.ensure-context');

/** Installs them unless a context manager already works here (a command run inside a process that has one). */
export function ensureContext(): void {
  const probe = ROOT_CONTEXT.setValue(PROBE, true);
  if (context.with(probe, () => context.active() === probe)) return;
  installContext();
}
