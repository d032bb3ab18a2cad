import { ROOT_CONTEXT, context, createContextKey } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';

const PROBE = createContextKey('threadline.probe');

/**
 * Proves that a context set with context.with() is still active after an await and a
 * macrotask. Without a registered context manager the API silently does nothing (pitfall: Missing context manager),
 * and every session would read as undefined; call this at start-up and fail loudly.
 */
export async function assertContextPropagation(): Promise<void> {
  const seen = await context.with(ROOT_CONTEXT.setValue(PROBE, true), async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return context.active().getValue(PROBE);
  });
  if (seen !== true) throw noContextManager();
}

/** TL_NO_CONTEXT_MANAGER, saying how to register one. */
export function noContextManager(): ThreadlineError {
  return new ThreadlineError(
    'TL_NO_CONTEXT_MANAGER',
    'No working OpenTelemetry context manager is registered, so session routing would be lost. ' +
      'Start with `node --import threadline/telemetry/register` (npm start does), or call installContext() from threadline/telemetry first.',
  );
}
