import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { currentSession, withSession } from '../../src/session/index.js';

const ENV = {
  THREADLINE_SESSION_PLATFORM: 'telegram',
  THREADLINE_SESSION_CHAT_ID: '-100',
  THREADLINE_SESSION_CHAT_TYPE: 'group',
  THREADLINE_SESSION_THREAD_ID: 'stale-thread',
};

describe('currentSession', () => {
  it('is the active session inside one, and never reads the environment there', () => {
    // The session has no thread: the stale variable must not stand in for it.
    const session = withSession({ platform: 'slack', chatType: 'channel', chatId: 'C1' }, () => currentSession(ENV));
    expect(session).toMatchObject({ platform: 'slack', chatId: 'C1' });
    expect(session?.threadId).toBeUndefined();
  });

  it('outside a session, falls back to the THREADLINE_SESSION_* variables, validated', () => {
    expect(currentSession(ENV)).toMatchObject({ platform: 'telegram', chatId: '-100', chatType: 'group', threadId: 'stale-thread' });
    expect(() => currentSession({ ...ENV, THREADLINE_SESSION_CHAT_TYPE: 'nonsense' })).toThrow(ThreadlineError);
  });

  it('an explicitly empty variable means none, not a value', () => {
    expect(currentSession({ ...ENV, THREADLINE_SESSION_THREAD_ID: '' })?.threadId).toBeUndefined();
  });

  it('is undefined where neither a session nor the variables name one', () => {
    expect(currentSession({})).toBeUndefined();
  });
});
