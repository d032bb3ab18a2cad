import { describe, expect, it } from 'vitest';
import { DISCORD_TEXT_MAX, discordNonce, discordPieces } from '../../../src/platforms/discord/discord-text.js';

describe('discordPieces', () => {
  it('keeps a short text whole, and an empty one as one empty piece', () => {
    expect(discordPieces('hi')).toEqual(['hi']);
    expect(discordPieces('')).toEqual(['']);
  });

  it('cuts a long text after a line break, into pieces Discord takes, losing nothing', () => {
    const text = `${'a'.repeat(1500)}\n${'b'.repeat(1500)}\n${'c'.repeat(2500)}`;
    const pieces = discordPieces(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.every((piece) => piece.length <= DISCORD_TEXT_MAX)).toBe(true);
    expect(pieces[0]).toBe(`${'a'.repeat(1500)}\n`);
  });

  it('never cuts a surrogate pair in two', () => {
    const text = `${'x'.repeat(DISCORD_TEXT_MAX - 1)}😀${'y'.repeat(10)}`;
    const pieces = discordPieces(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces[0]!.endsWith('x')).toBe(true);
  });
});

describe('discordNonce', () => {
  it('is the same for the same piece of the same delivery, and 25 characters at most', () => {
    expect(discordNonce('d/1', 0)).toBe(discordNonce('d/1', 0));
    expect(discordNonce('d/1', 0)).not.toBe(discordNonce('d/1', 1));
    expect(discordNonce('d/1', 0).length).toBeLessThanOrEqual(25);
  });
});
