import { Hash, createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deriveSessionId, parseSessionKey, sessionKey, type SessionKeyParts } from '../../src/session/index.js';
import { RECENT_SESSION_IDS } from '../../src/session/session-key.js';
import { anyIdArb, collidingIdArb, idArb, keyPartsArb, platformArb, chatTypeArb } from '../helpers/arbitraries.js';
import { expectThreadlineError, throwsOnlyThreadlineError } from '../helpers/errors.js';

/** A canonical text form of parts, for telling distinct parts apart. */
function canonical(parts: SessionKeyParts): string {
  return JSON.stringify([parts.platform, parts.chatType, parts.chatId, parts.threadId ?? null, parts.userId ?? null]);
}

describe('sessionKey', () => {
  it('has the documented layout, each part percent-encoded', () => {
    expect(sessionKey({ platform: 'telegram', chatType: 'group', chatId: '-100:1', threadId: 'a/b' })).toBe(
      'v1:telegram:group:-100%3A1:a%2Fb:',
    );
  });

  it('does not collide for ids containing the separator', () => {
    const base = { platform: 'telegram', chatType: 'group' } as const;
    const keys = [
      sessionKey({ ...base, chatId: 'a:b', threadId: 'c' }),
      sessionKey({ ...base, chatId: 'a', threadId: 'b:c' }),
      sessionKey({ ...base, chatId: 'a:b:c' }),
      sessionKey({ ...base, chatId: 'a', userId: 'b:c' }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('round-trips through parseSessionKey for arbitrary unicode ids', () => {
    fc.assert(
      fc.property(keyPartsArb(anyIdArb), (parts) => {
        expect(parseSessionKey(sessionKey(parts))).toEqual(parts);
      }),
      { numRuns: 500 },
    );
  });

  it('writes keys with exactly six ":"-separated pieces whatever the ids hold', () => {
    fc.assert(
      fc.property(keyPartsArb(anyIdArb), (parts) => {
        expect(sessionKey(parts).split(':')).toHaveLength(6);
      }),
    );
  });

  it('is injective: distinct parts give distinct keys and distinct session ids', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(keyPartsArb(collidingIdArb), { selector: canonical, minLength: 2, maxLength: 30 }),
        (all) => {
          expect(new Set(all.map(sessionKey)).size).toBe(all.length);
          expect(new Set(all.map(deriveSessionId)).size).toBe(all.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is injective when ids differ only by where a ":" splits them', () => {
    fc.assert(
      fc.property(platformArb, chatTypeArb, idArb, idArb, idArb, (platform, chatType, a, b, c) => {
        const left = { platform, chatType, chatId: `${a}:${b}`, threadId: c };
        const right = { platform, chatType, chatId: a, threadId: `${b}:${c}` };
        expect(sessionKey(left)).not.toBe(sessionKey(right));
        expect(deriveSessionId(left)).not.toBe(deriveSessionId(right));
      }),
    );
  });
});

describe('deriveSessionId', () => {
  it('is tl_ and 22 base64url characters, and stable', () => {
    fc.assert(
      fc.property(keyPartsArb(), (parts) => {
        const id = deriveSessionId(parts);
        expect(id).toMatch(/^tl_[A-Za-z0-9_-]{22}$/);
        expect(deriveSessionId({ ...parts })).toBe(id);
      }),
    );
  });
});

describe('parseSessionKey', () => {
  it.each([
    ['empty', ''],
    ['another version', 'v2:telegram:group:1::'],
    ['too few pieces', 'v1:telegram:group:1:'],
    ['too many pieces', 'v1:telegram:group:1:::'],
    ['raw ":" in an id', 'v1:telegram:group:a:b::'],
    ['broken percent-encoding', 'v1:telegram:group:%zz::'],
    ['truncated UTF-8', 'v1:telegram:group:%E0%A4%A::'],
    ['an encoded lone surrogate', 'v1:telegram:group:%ED%A0%80::'],
    ['no platform', 'v1::group:1::'],
    ['no chat', 'v1:telegram:group:::'],
    ['an unknown chat type', 'v1:telegram:supergroup:1::'],
    ['a non-canonical escape', 'v1:telegram:group:%61::'],
    ['lowercase hex where sessionKey writes uppercase', 'v1:telegram:group:a%3ab::'],
    ['a joined legacy key', 'telegram:-100:42'],
  ])('refuses %s with TL_SNAPSHOT_INVALID', (_name, key) => {
    expectThreadlineError(() => parseSessionKey(key), 'TL_SNAPSHOT_INVALID');
  });

  it.each([null, undefined, 42, {}, ['v1']])('refuses the non-string %j with TL_SNAPSHOT_INVALID', (key) => {
    expectThreadlineError(() => parseSessionKey(key as unknown as string), 'TL_SNAPSHOT_INVALID');
  });

  it('throws nothing but TL_SNAPSHOT_INVALID for garbage, and accepts only what sessionKey writes', () => {
    const pieceArb = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.constantFrom('v1', 'telegram', 'dm', 'group', '', '%', '%zz', '%3A', '%E0%A4%A', '%ED%A0%80'),
    );
    const keyArb = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.array(pieceArb, { maxLength: 8 }).map((pieces) => pieces.join(':')),
      fc.array(pieceArb, { minLength: 5, maxLength: 5 }).map((pieces) => ['v1', ...pieces].join(':')),
      fc.anything(),
    );
    fc.assert(
      fc.property(keyArb, (key) => {
        let parsed: SessionKeyParts | undefined;
        const threw = throwsOnlyThreadlineError(() => {
          parsed = parseSessionKey(key as string);
        }, ['TL_SNAPSHOT_INVALID']);
        if (!threw) expect(sessionKey(parsed!)).toBe(key);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('sessionIdOfKey', () => {
  it('is deriveSessionId for a caller that already holds the key, for every epoch', async () => {
    const { sessionIdOfKey } = await import('../../src/session/index.js');
    const parts: SessionKeyParts = { platform: 'telegram', chatType: 'group', chatId: '-100:1', threadId: '7' };
    for (const epoch of [0, 1, 5]) expect(sessionIdOfKey(sessionKey(parts), epoch)).toBe(deriveSessionId(parts, epoch));
    expect(sessionIdOfKey(sessionKey(parts), 1)).not.toBe(sessionIdOfKey(sessionKey(parts), 0));
  });

  it('answers remembered and forgotten keys alike: the hash of the key, past the memo bound', async () => {
    const { sessionIdOfKey } = await import('../../src/session/index.js');
    const hashed = (input: string) => 'tl_' + createHash('sha256').update(input).digest('base64url').slice(0, 22);
    const keys = Array.from({ length: 10_100 }, (_, i) => sessionKey({ platform: 'webhook', chatType: 'dm', chatId: `c${i}` }));
    for (const pass of [1, 2]) {
      for (const [i, key] of keys.entries()) {
        const epoch = i % 3;
        expect(sessionIdOfKey(key, epoch), `pass ${pass}, key ${i}`).toBe(hashed(epoch === 0 ? key : `${key}#${epoch}`));
      }
    }
  });

  it('hashes a key again only once it is the least recently used past the memo bound', async () => {
    const { sessionIdOfKey } = await import('../../src/session/index.js');
    const key = (i: number) => sessionKey({ platform: 'webhook', chatType: 'dm', chatId: `memo${i}` });
    // Every hash ends in digest(), whichever module made it.
    const digests = vi.spyOn(Hash.prototype, 'digest');
    const hashesOf = (work: () => void) => {
      const before = digests.mock.calls.length;
      work();
      return digests.mock.calls.length - before;
    };
    expect(hashesOf(() => sessionIdOfKey(key(0)))).toBe(1);
    expect(hashesOf(() => sessionIdOfKey(key(0)))).toBe(0);
    expect(hashesOf(() => Array.from({ length: RECENT_SESSION_IDS - 1 }, (_, i) => sessionIdOfKey(key(i + 1))))).toBe(RECENT_SESSION_IDS - 1);
    sessionIdOfKey(key(0)); // used again: key 1 is now the least recently used
    expect(hashesOf(() => sessionIdOfKey(key(RECENT_SESSION_IDS)))).toBe(1);
    expect(hashesOf(() => sessionIdOfKey(key(0)))).toBe(0);
    expect(hashesOf(() => sessionIdOfKey(key(1)))).toBe(1);
    digests.mockRestore();
  });
});
