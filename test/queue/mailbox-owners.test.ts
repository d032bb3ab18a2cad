import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MailboxOwners } from '../../src/queue/mailbox-owners.js';
import type { Mailboxes } from '../../src/queue/mailboxes.js';

/** A Mailboxes whose renew answers as `renew` says. */
function mailboxes(renew: (owned: ReadonlyArray<{ key: string; token: string }>) => Promise<string[]>): Mailboxes {
  return { namespace: 'turns', renew } as unknown as Mailboxes;
}

const silent = pino({ level: 'silent' });

afterEach(() => {
  vi.useRealTimers();
});

describe('MailboxOwners', () => {
  it('keeps an ownership Redis confirms, lease after lease', async () => {
    vi.useFakeTimers();
    const renewed: string[][] = [];
    const owners = new MailboxOwners(mailboxes(async (owned) => (renewed.push(owned.map(({ key }) => key)), [])), 1_000, silent);
    const onLost = vi.fn();
    owners.hold('chat-1', 'a', onLost);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(onLost).not.toHaveBeenCalled();
    expect(renewed.length).toBe(10);
    owners.drop('chat-1', 'a');
  });

  it('loses an ownership Redis says another holds, once', async () => {
    vi.useFakeTimers();
    const owners = new MailboxOwners(mailboxes(async () => ['chat-1']), 1_000, silent);
    const onLost = vi.fn();
    owners.hold('chat-1', 'a', onLost);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(onLost).toHaveBeenCalledTimes(1);
  });

  it('loses an ownership Redis has not confirmed for a lease (cut off: another may own it now), though no renewal answers', async () => {
    vi.useFakeTimers();
    // Redis never answers: the renewal hangs.
    const owners = new MailboxOwners(mailboxes(() => new Promise<string[]>(() => undefined)), 1_000, silent);
    const onLost = vi.fn();
    owners.hold('chat-1', 'a', onLost);
    await vi.advanceTimersByTimeAsync(600);
    expect(onLost).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(600);
    expect(onLost).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(onLost).toHaveBeenCalledTimes(1);
  });

  it('drop leaves a later ownership of the same mailbox renewed', async () => {
    vi.useFakeTimers();
    const renewed: string[] = [];
    const owners = new MailboxOwners(mailboxes(async (owned) => (renewed.push(...owned.map(({ token }) => token)), [])), 1_000, silent);
    owners.hold('chat-1', 'first', () => undefined);
    owners.hold('chat-1', 'second', () => undefined);
    owners.drop('chat-1', 'first');
    await vi.advanceTimersByTimeAsync(500);
    expect(renewed).toEqual(['second']);
  });
});
