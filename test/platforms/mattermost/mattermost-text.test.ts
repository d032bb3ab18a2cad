import { describe, expect, it } from 'vitest';
import { MATTERMOST_POST_MAX, splitPost } from '../../../src/platforms/mattermost/mattermost-text.js';

describe('splitPost', () => {
  it('keeps a text that fits in one post, the empty text included', () => {
    expect(splitPost('short')).toEqual(['short']);
    expect(splitPost('')).toEqual(['']);
    expect(splitPost('x'.repeat(MATTERMOST_POST_MAX))).toHaveLength(1);
  });

  it('cuts a longer text at a line break or space, each part within the limit, nothing lost', () => {
    const text = Array.from({ length: 40 }, (_, i) => `line ${i} ${'word '.repeat(i % 7)}`).join('\n');
    const parts = splitPost(text, 50);
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect([...part].length).toBeLessThanOrEqual(50);
    expect(parts.slice(0, -1).every((part) => part.endsWith('\n') || part.endsWith(' '))).toBe(true);
  });

  it('counts characters as the server does, never cutting a surrogate pair', () => {
    const parts = splitPost('😀'.repeat(25), 10);
    expect(parts.map((part) => [...part].length)).toEqual([10, 10, 5]);
    expect(parts.join('')).toBe('😀'.repeat(25));
  });
});
