import { context, type Context } from '@opentelemetry/api';

const fromApi = (): Context => context.active();

/**
 * Reads the active context. By default through the OpenTelemetry API, which finds the
 * registered context manager on every call. When threadline registered that manager itself,
 * the manager's own reader is installed here, so session reads (every log line, every span
 * start) skip the lookup. The manager removes it when disabled, so a replaced manager is
 * never bypassed.
 */
export let activeContext: () => Context = fromApi;

/** For the context manager threadline registers: install its reader, or undefined to go back to the API. */
export function setActiveContextReader(reader: (() => Context) | undefined): void {
  activeContext = reader ?? fromApi;
}
