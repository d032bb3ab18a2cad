import { context } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { assertContextPropagation, getSession, withSession } from '../../src/session/index.js';
import { installContext } from '../../src/telemetry/index.js';
import { assertThreadlineError, rejectionOf, thrownBy } from '../helpers/errors.js';
import { MINIMAL_SESSION } from '../helpers/sessions.js';

describe('assertContextPropagation', () => {
  it('passes with the AsyncLocalStorage context manager installed', async () => {
    await expect(assertContextPropagation()).resolves.toBeUndefined();
  });

  it('throws TL_NO_CONTEXT_MANAGER when no context manager is registered (pitfall: Missing context manager)', async () => {
    context.disable();
    try {
      // What the check guards against: without a manager, context.with() silently does nothing.
      expect(context.with(context.active(), () => getSession())).toBeUndefined();
      // withSession says so instead of losing the session.
      expect(assertThreadlineError(thrownBy(() => withSession(MINIMAL_SESSION, () => getSession())), 'TL_NO_CONTEXT_MANAGER').message).toMatch(/installContext/);
      const error = assertThreadlineError(await rejectionOf(assertContextPropagation()), 'TL_NO_CONTEXT_MANAGER');
      expect(error.message).toMatch(/--import|installContext/);
    } finally {
      installContext();
    }
    expect(withSession(MINIMAL_SESSION, () => getSession())?.chatId).toBe(MINIMAL_SESSION.chatId);
  });
});
