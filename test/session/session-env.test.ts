import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  SESSION_ENV,
  childProcessEnv,
  createSession,
  sessionEnv,
  withSession,
  type Session,
  type SessionEnvName,
} from '../../src/session/index.js';
import { expectThreadlineError } from '../helpers/errors.js';
import { FULL_SESSION, sessionInput } from '../helpers/sessions.js';

const NAMES = Object.keys(SESSION_ENV) as SessionEnvName[];
const THREADLESS = sessionInput({ threadId: undefined, userName: undefined, messageId: undefined });

/** Stale process-wide values, as a gateway that once exported them would have (pitfall: Stale environment fallback). */
const STALE: Record<SessionEnvName, string> = Object.fromEntries(NAMES.map((name) => [name, `stale-${name}`])) as Record<
  SessionEnvName,
  string
>;

function sessionEnvKeys(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env).filter((key) => key.startsWith('THREADLINE_SESSION_')).sort();
}

let saved: NodeJS.ProcessEnv;
beforeEach(() => {
  saved = { ...process.env };
  for (const key of sessionEnvKeys(process.env)) delete process.env[key];
});
afterEach(() => {
  for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
  Object.assign(process.env, saved);
});

describe('sessionEnv outside a session', () => {
  it('reads process.env, then the fallback', () => {
    process.env['THREADLINE_SESSION_CHAT_ID'] = 'from-env';
    expect(sessionEnv('THREADLINE_SESSION_CHAT_ID')).toBe('from-env');
    expect(sessionEnv('THREADLINE_SESSION_CHAT_ID', 'fallback')).toBe('from-env');
    expect(sessionEnv('THREADLINE_SESSION_THREAD_ID', 'fallback')).toBe('fallback');
    expect(sessionEnv('THREADLINE_SESSION_THREAD_ID')).toBeUndefined();
  });
});

describe('sessionEnv inside a session', () => {
  it.each(NAMES)('%s is the session field, not the stale environment', (name) => {
    Object.assign(process.env, STALE);
    const session: Session = createSession(FULL_SESSION);
    const field = SESSION_ENV[name];
    expect(session[field]).toBeDefined();
    expect(withSession(session, () => sessionEnv(name, 'fallback'))).toBe(session[field]);
  });

  it('never returns a stale THREADLINE_SESSION_THREAD_ID when the session has no thread (pitfall: Stale environment fallback)', () => {
    process.env['THREADLINE_SESSION_THREAD_ID'] = 'stale-thread';
    withSession(THREADLESS, () => {
      expect(sessionEnv('THREADLINE_SESSION_THREAD_ID', 'none')).toBe('none');
      expect(sessionEnv('THREADLINE_SESSION_THREAD_ID')).toBeUndefined();
      expect(sessionEnv('THREADLINE_SESSION_MESSAGE_ID')).toBeUndefined();
    });
  });
});

describe('sessionEnv with an unknown name', () => {
  it.each(['THREADLINE_SESSION_FOO', 'THREADLINE_SESSION_THREADID', 'PATH', '', 'toString', 'constructor', '__proto__', 'hasOwnProperty'])(
    'refuses %j with TL_ENV_NAME_UNKNOWN, in and outside a session',
    (name) => {
      process.env[name === '' ? 'UNUSED' : name] = 'set';
      expectThreadlineError(() => sessionEnv(name as SessionEnvName, 'fallback'), 'TL_ENV_NAME_UNKNOWN');
      withSession(FULL_SESSION, () => {
        expectThreadlineError(() => sessionEnv(name as SessionEnvName, 'fallback'), 'TL_ENV_NAME_UNKNOWN');
      });
    },
  );
});

describe('childProcessEnv', () => {
  const base: NodeJS.ProcessEnv = { PATH: '/usr/bin', LANG: 'C.UTF-8', ...STALE };

  it('outside a session strips every THREADLINE_SESSION_* and keeps the rest', () => {
    const env = childProcessEnv(base);
    expect(sessionEnvKeys(env)).toEqual([]);
    expect(env['PATH']).toBe('/usr/bin');
    expect(env['LANG']).toBe('C.UTF-8');
  });

  it("inside a session adds only that session's routing (pitfall: Inherited environment in a child process)", () => {
    const session = createSession(THREADLESS);
    const env = withSession(session, () => childProcessEnv(base));
    expect(env).toEqual({
      PATH: '/usr/bin',
      LANG: 'C.UTF-8',
      THREADLINE_SESSION_PLATFORM: session.platform,
      THREADLINE_SESSION_CHAT_ID: session.chatId,
      THREADLINE_SESSION_CHAT_NAME: session.chatName,
      THREADLINE_SESSION_CHAT_TYPE: session.chatType,
      THREADLINE_SESSION_USER_ID: session.userId,
      THREADLINE_SESSION_ID: session.sessionId,
    });
  });

  it('never passes the user name or the reply anchor', () => {
    const env = withSession(FULL_SESSION, () => childProcessEnv(base));
    expect(env['THREADLINE_SESSION_THREAD_ID']).toBe(FULL_SESSION.threadId);
    expect(env).not.toHaveProperty('THREADLINE_SESSION_USER_NAME');
    expect(env).not.toHaveProperty('THREADLINE_SESSION_MESSAGE_ID');
  });

  it('does not change the base', () => {
    const copy = { ...base };
    withSession(FULL_SESSION, () => childProcessEnv(base));
    expect(base).toEqual(copy);
  });

  it('defaults to process.env and a real child sees its own session', () => {
    Object.assign(process.env, STALE);
    const env = withSession(THREADLESS, () => childProcessEnv());
    const script =
      'const e = Object.entries(process.env).filter(([k]) => k.startsWith("THREADLINE_SESSION_"));' +
      'process.stdout.write(JSON.stringify(Object.fromEntries(e)))';
    const seen = JSON.parse(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })) as Record<string, string>;
    const session = createSession(THREADLESS);
    expect(seen['THREADLINE_SESSION_CHAT_ID']).toBe(session.chatId);
    expect(seen['THREADLINE_SESSION_ID']).toBe(session.sessionId);
    expect(seen).not.toHaveProperty('THREADLINE_SESSION_THREAD_ID');
    expect(Object.values(seen).filter((value) => value.startsWith('stale-'))).toEqual([]);
  });
});
