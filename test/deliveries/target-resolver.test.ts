import { describe, expect, it } from 'vitest';
import { TargetResolver } from '../../src/deliveries/target-resolver.js';
import { ThreadlineError } from '../../src/errors.js';
import { formatDestination, type Destination } from '../../src/session/delivery.js';
import { captureRouting, withSession, type RoutingSnapshot } from '../../src/session/index.js';
import { formatTarget, parseTarget } from '../../src/session/target.js';
import { sessionInput } from '../helpers/sessions.js';

/** The session active where the delivery is made. */
const IN_CONTEXT = sessionInput({ chatId: 'ctx', threadId: '1' });
/** The routing captured where the work began, when no session is active any more (the CLI, a replay). */
const SNAPSHOT: RoutingSnapshot = withSession(sessionInput({ chatId: 'snap', threadId: '2' }), () => captureRouting());
const HOME: Destination = { platform: 'telegram', chatId: 'home' };

type Origin = 'context' | 'snapshot' | 'none';
type Outcome = string | 'TL_SESSION_MISSING' | 'TL_HOME_UNSET' | 'TL_TARGET_INVALID';

/**
 * Every kind of target × where the origin comes from × telegram's home set or not × telegram
 * enabled or not: what a delivery made now resolves to (`resolve`), and what a job kept for
 * later runs stores (`check`). The context's session wins over the snapshot's.
 */
const TABLE: readonly [target: string, origin: Origin, home: 'set' | 'unset', telegram: 'enabled' | 'disabled', resolve: Outcome, check: Outcome][] = [
  ['origin', 'context', 'set', 'enabled', 'telegram:ctx:1', 'origin'],
  ['origin', 'context', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['origin', 'context', 'unset', 'enabled', 'telegram:ctx:1', 'origin'],
  ['origin', 'context', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['origin', 'snapshot', 'set', 'enabled', 'telegram:snap:2', 'origin'],
  ['origin', 'snapshot', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['origin', 'snapshot', 'unset', 'enabled', 'telegram:snap:2', 'origin'],
  ['origin', 'snapshot', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['origin', 'none', 'set', 'enabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['origin', 'none', 'set', 'disabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['origin', 'none', 'unset', 'enabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['origin', 'none', 'unset', 'disabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['home', 'context', 'set', 'enabled', 'telegram:home', 'home'],
  ['home', 'context', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home', 'context', 'unset', 'enabled', 'TL_HOME_UNSET', 'home'],
  ['home', 'context', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home', 'snapshot', 'set', 'enabled', 'telegram:home', 'home'],
  ['home', 'snapshot', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home', 'snapshot', 'unset', 'enabled', 'TL_HOME_UNSET', 'home'],
  ['home', 'snapshot', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home', 'none', 'set', 'enabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['home', 'none', 'set', 'disabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['home', 'none', 'unset', 'enabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['home', 'none', 'unset', 'disabled', 'TL_SESSION_MISSING', 'TL_SESSION_MISSING'],
  ['home:telegram', 'context', 'set', 'enabled', 'telegram:home', 'home:telegram'],
  ['home:telegram', 'context', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home:telegram', 'context', 'unset', 'enabled', 'TL_HOME_UNSET', 'home:telegram'],
  ['home:telegram', 'context', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home:telegram', 'snapshot', 'set', 'enabled', 'telegram:home', 'home:telegram'],
  ['home:telegram', 'snapshot', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home:telegram', 'snapshot', 'unset', 'enabled', 'TL_HOME_UNSET', 'home:telegram'],
  ['home:telegram', 'snapshot', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home:telegram', 'none', 'set', 'enabled', 'telegram:home', 'home:telegram'],
  ['home:telegram', 'none', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['home:telegram', 'none', 'unset', 'enabled', 'TL_HOME_UNSET', 'home:telegram'],
  ['home:telegram', 'none', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'context', 'set', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'context', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'context', 'unset', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'context', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'snapshot', 'set', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'snapshot', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'snapshot', 'unset', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'snapshot', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'none', 'set', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'none', 'set', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
  ['telegram:c%3A9:t9', 'none', 'unset', 'enabled', 'telegram:c%3A9:t9', 'telegram:c%3A9:t9'],
  ['telegram:c%3A9:t9', 'none', 'unset', 'disabled', 'TL_TARGET_INVALID', 'TL_TARGET_INVALID'],
];

function resolverFor(home: 'set' | 'unset', telegram: 'enabled' | 'disabled', homes = new Map<string, Destination>()): TargetResolver {
  if (home === 'set') homes.set('telegram', HOME);
  const platforms = new Set(telegram === 'enabled' ? ['webhook', 'telegram'] : ['webhook']);
  return new TargetResolver({ get: async (platform) => homes.get(platform) }, platforms);
}

/** Runs `fn` with the origin where the row puts it: the active context (and a snapshot of another chat), the snapshot alone, or nowhere. */
function withOrigin<T>(origin: Origin, fn: (snapshot: RoutingSnapshot | undefined) => T): T {
  if (origin === 'context') return withSession(IN_CONTEXT, () => fn(SNAPSHOT));
  return fn(origin === 'snapshot' ? SNAPSHOT : undefined);
}

async function outcomeOf(fn: () => Promise<string>): Promise<string> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ThreadlineError) return error.code;
    throw error;
  }
}

describe('TargetResolver', () => {
  it.each(TABLE)('%s, origin in %s, home %s, telegram %s: resolves to %s, kept as %s', async (text, origin, home, telegram, resolved, kept) => {
    const targets = resolverFor(home, telegram);
    const target = parseTarget(text);
    expect(await withOrigin(origin, (snapshot) => outcomeOf(async () => formatDestination(await targets.resolve(target, snapshot))))).toBe(resolved);
    expect(await withOrigin(origin, (snapshot) => outcomeOf(async () => formatTarget(targets.check(target, snapshot))))).toBe(kept);
  });

  it('takes the platform of a bare home from the active context before the snapshot', async () => {
    const homes = new Map([['webhook', { platform: 'webhook', chatId: 'webhook-home' }]]);
    const targets = resolverFor('set', 'enabled', homes);
    const fromWebhook = sessionInput({ platform: 'webhook', chatId: 'w1', threadId: undefined });
    expect(await withSession(fromWebhook, () => targets.resolve({ to: 'home' }, SNAPSHOT))).toEqual({ platform: 'webhook', chatId: 'webhook-home' });
    expect(await targets.resolve({ to: 'home' }, SNAPSHOT)).toEqual(HOME);
  });

  it('names the enabled platforms when it refuses one, and never asks for a /sethome that cannot help', async () => {
    const targets = resolverFor('unset', 'disabled');
    await expect(targets.resolve(parseTarget('home:irc'), SNAPSHOT)).rejects.toThrow(/^No platform "irc" is enabled in this gateway \(enabled: webhook\)$/);
    expect(() => targets.check(parseTarget('irc:#ops'), SNAPSHOT)).toThrow(/No platform "irc" is enabled in this gateway \(enabled: webhook\)/);
  });

  it('refuses an explicit destination the store could not read back (an empty thread)', async () => {
    const targets = resolverFor('set', 'enabled');
    const target = { to: 'explicit', destination: { platform: 'telegram', chatId: 'c1', threadId: '' } } as const;
    await expect(targets.resolve(target, SNAPSHOT)).rejects.toMatchObject({ code: 'TL_TARGET_INVALID' });
    expect(() => targets.check(target, SNAPSHOT)).toThrow(expect.objectContaining({ code: 'TL_TARGET_INVALID' }));
  });

  it.each([
    ['a newline in the chat id', 'telegram:a%0Ab', /^The target's chat id "a\\nb" must not contain control characters/],
    ['a NUL, percent-encoded', 'telegram:%00', /^The target's chat id "\\u0000" must not contain control characters/],
    ['an escape in the thread id', 'telegram:c1:t%1B', /^The target's thread id "t\\u001b" must not contain control characters/],
    ['a line separator', 'telegram:a%E2%80%A8', /^The target's chat id "a\\u2028" must not contain control characters, line separators/],
    ['a 990-character chat id', `telegram:${'9'.repeat(990)}`, /^The target's chat id "9{40}…" must be at most 256 characters, got 990$/],
    ['a 990-character thread id', `telegram:c1:${'t'.repeat(990)}`, /^The target's thread id "t{40}…" must be at most 256 characters, got 990$/],
    ['a platform that is no platform name', 'Tele%20Gram:c1', /^The target's platform "Tele Gram" is no platform name/],
  ])('refuses an explicit target with %s, as an inbound message with it is refused', async (_what, text, message) => {
    const targets = resolverFor('set', 'enabled');
    const target = parseTarget(text);
    await expect(targets.resolve(target, SNAPSHOT)).rejects.toMatchObject({ code: 'TL_TARGET_INVALID', message: expect.stringMatching(message) });
    expect(() => targets.check(target, SNAPSHOT)).toThrow(message);
  });

  it('refuses an explicit destination with a lone surrogate, which no percent-encoding can carry', async () => {
    const targets = resolverFor('set', 'enabled');
    const target = { to: 'explicit', destination: { platform: 'telegram', chatId: 'c\uD800' } } as const;
    await expect(targets.resolve(target, SNAPSHOT)).rejects.toMatchObject({ code: 'TL_TARGET_INVALID' });
  });

  it('reads the enabled platforms as they are now, not as they were when it was made', async () => {
    const platforms = new Set(['webhook', 'telegram']);
    const targets = new TargetResolver({ get: async () => undefined }, platforms);
    platforms.delete('telegram');
    await expect(targets.resolve(parseTarget('telegram:c1'), SNAPSHOT)).rejects.toMatchObject({ code: 'TL_TARGET_INVALID' });
  });
});
