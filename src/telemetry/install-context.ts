import { context, propagation, type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { SessionBaggagePropagator } from './session-baggage-propagator.js';
import type { TelemetryConfig } from './telemetry-config.js';
import { ThreadlineContextManager } from './threadline-context-manager.js';

/** W3C trace context plus threadline's baggage policies, as one propagator. */
export function createPropagator(config?: Pick<TelemetryConfig, 'outboundBaggage' | 'inboundBaggage'>): TextMapPropagator {
  return new CompositePropagator({
    propagators: [
      new W3CTraceContextPropagator(),
      new SessionBaggagePropagator(config?.outboundBaggage, config?.inboundBaggage),
    ],
  });
}

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
