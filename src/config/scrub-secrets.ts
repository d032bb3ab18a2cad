import { SETTINGS } from './settings.js';

/** OpenTelemetry variables that carry credentials: read by the SDK when it starts, needed no more. */
const OTEL_SECRET = /^OTEL_.*(HEADERS|CLIENT_KEY)$/;

/**
 * Takes the gateway's secrets out of `env` once they have been read, so nothing the process
 * starts later (an encoder, a library's helper) inherits them. /proc/<pid>/environ still shows
 * the environment the process began with: only THREADLINE_TERMINAL_USER keeps a command from it.
 * Returns the names removed.
 */
export function scrubSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  const removed: string[] = [];
  for (const name of Object.keys(env)) {
    const secret = (SETTINGS as Record<string, { secret?: boolean }>)[name]?.secret === true || OTEL_SECRET.test(name);
    if (!secret) continue;
    delete env[name];
    removed.push(name);
  }
  return removed;
}
