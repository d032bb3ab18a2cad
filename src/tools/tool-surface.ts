import { context, createContextKey, type Context } from '@opentelemetry/api';
import { activeContext, getSession } from '../session/index.js';

/** Where a tool runs when no gateway session does: the command line, a script, a test. */
export const CLI_SURFACE = 'cli';

/** Set on a context whose session came from the THREADLINE_SESSION_* variables, not from a platform. */
const FROM_ENVIRONMENT = createContextKey('threadline.tools.session-from-environment');

/** `ctx` marked as running outside the gateway: its session was read from the environment. */
export function markedFromEnvironment(ctx: Context = context.active()): Context {
  return ctx.setValue(FROM_ENVIRONMENT, true);
}

/**
 * The surface a tool serves, read from the context: the platform of a gateway session, or
 * `cli` outside the gateway, including where the session came from the environment.
 */
export function toolSurface(ctx: Context = activeContext()): string {
  if (ctx.getValue(FROM_ENVIRONMENT) === true) return CLI_SURFACE;
  return getSession(ctx)?.platform ?? CLI_SURFACE;
}
