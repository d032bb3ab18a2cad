import { ThreadlineError } from '../errors.js';
import { getSession } from './run-with-session.js';
import type { Session, SessionField } from './session.js';

/** The environment variables that carry a session into code outside the gateway. */
export const SESSION_ENV = {
  THREADLINE_SESSION_PLATFORM: 'platform',
  THREADLINE_SESSION_CHAT_ID: 'chatId',
  THREADLINE_SESSION_CHAT_NAME: 'chatName',
  THREADLINE_SESSION_CHAT_TYPE: 'chatType',
  THREADLINE_SESSION_THREAD_ID: 'threadId',
  THREADLINE_SESSION_USER_ID: 'userId',
  THREADLINE_SESSION_USER_NAME: 'userName',
  THREADLINE_SESSION_MESSAGE_ID: 'messageId',
  THREADLINE_SESSION_ID: 'sessionId',
} as const satisfies Record<string, SessionField>;

export type SessionEnvName = keyof typeof SESSION_ENV;

/** What a child process receives: the routing it needs to answer, nothing personal beyond the chat name. */
const CHILD_ENV_NAMES: readonly SessionEnvName[] = [
  'THREADLINE_SESSION_PLATFORM',
  'THREADLINE_SESSION_CHAT_ID',
  'THREADLINE_SESSION_CHAT_NAME',
  'THREADLINE_SESSION_CHAT_TYPE',
  'THREADLINE_SESSION_THREAD_ID',
  'THREADLINE_SESSION_USER_ID',
  'THREADLINE_SESSION_ID',
];

/**
 * Resolves a session variable: the active session → process.env → `fallback`.
 * Inside a session, process.env is never consulted: a field the session has no value for
 * (no thread, say) is "none", and a stale variable from the environment must not stand in
 * for it (pitfall: Stale environment fallback).
 */
export function sessionEnv(name: SessionEnvName, fallback?: string): string | undefined {
  // Own properties only: 'toString' or 'constructor' must not resolve through the prototype.
  const field = Object.hasOwn(SESSION_ENV, name) ? (SESSION_ENV[name] as SessionField) : undefined;
  if (field === undefined) {
    throw new ThreadlineError(
      'TL_ENV_NAME_UNKNOWN',
      `${String(name)} is not a session variable; use one of ${Object.keys(SESSION_ENV).join(', ')}`,
    );
  }
  const session = getSession();
  if (session !== undefined) return session[field] ?? fallback;
  return process.env[name] ?? fallback;
}

/**
 * The environment for a child process of the active session: `base` (default: this
 * process's environment) with every THREADLINE_SESSION_* variable removed, then the active
 * session's own values added. The gateway's own session variables never leak into a
 * child (pitfall: Inherited environment in a child process); outside a session the child gets none.
 */
export function childProcessEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    if (!key.startsWith('THREADLINE_SESSION_')) env[key] = value;
  }
  const session = getSession();
  if (session === undefined) return env;
  for (const name of CHILD_ENV_NAMES) {
    const value = session[SESSION_ENV[name] as keyof Session];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
