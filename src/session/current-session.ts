import { getSession } from './run-with-session.js';
import { SESSION_ENV, type SessionEnvName } from './session-env.js';
import type { Session, SessionInput } from './session.js';
import { createSession } from './validate-session.js';

/**
 * The session a tool works for: the active context's, or outside any session (a CLI, a
 * script a background command runs, a test) the one the THREADLINE_SESSION_* variables of
 * `env` describe, validated; undefined when neither names one. Inside a session the
 * environment is never read, so a stale variable cannot stand in for a field the session
 * has no value for (pitfall: Stale environment fallback); in the environment an explicitly
 * empty variable means "none" too.
 */
export function currentSession(env: NodeJS.ProcessEnv = process.env): Session | undefined {
  const active = getSession();
  if (active !== undefined) return active;
  const input: Record<string, string> = {};
  for (const [name, field] of Object.entries(SESSION_ENV) as [SessionEnvName, string][]) {
    const value = env[name];
    if (value !== undefined && value !== '') input[field] = value;
  }
  if (input['platform'] === undefined && input['chatId'] === undefined) return undefined;
  // Validated like any inbound routing: a malformed variable is TL_SESSION_INVALID, not a guess.
  return createSession({ chatType: 'dm', ...input } as unknown as SessionInput);
}
