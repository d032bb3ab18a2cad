import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { describe, expect, it } from 'vitest';
import { contextWithSession, getSession } from '../../src/session/index.js';
import { installContext } from '../../src/telemetry/index.js';
import { ThreadlineContextManager } from '../../src/telemetry/threadline-context-manager.js';

const session = { platform: 'telegram', chatType: 'group', chatId: '-100', threadId: '7' } as const;

describe('ThreadlineContextManager', () => {
  it('reads sessions through its own store while registered', async () => {
    const ctx = contextWithSession(ROOT_CONTEXT, session);
    const seen = await context.with(ctx, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return getSession();
    });
    expect(seen?.chatId).toBe('-100');
  });

  it('gives the shortcut back when disabled, so a manager registered after it is read', () => {
    context.disable();
    const other = new AsyncLocalStorageContextManager().enable();
    try {
      expect(context.setGlobalContextManager(other)).toBe(true);
      const ctx = contextWithSession(ROOT_CONTEXT, session);
      expect(context.with(ctx, () => getSession()?.threadId)).toBe('7');
    } finally {
      context.disable();
      installContext();
    }
  });

  it('does not adopt itself when another manager is the registered one', () => {
    const stranger = new ThreadlineContextManager().enable();
    expect(stranger.adoptIfRegistered()).toBe(false);
    const ctx = contextWithSession(ROOT_CONTEXT, session);
    expect(context.with(ctx, () => getSession()?.chatId)).toBe('-100');
    stranger.disable();
    // Disabling an unregistered manager must not break reads through the registered one.
    expect(context.with(ctx, () => getSession()?.chatId)).toBe('-100');
  });
});
