/** The longest message a post holds: 16,383 characters (runes) on current servers. */
export const MATTERMOST_POST_MAX = 16_383;

/**
 * `text` as the messages of consecutive posts, each within `max` characters (code points, as
 * the server counts), cut at the last line break or space of each part where there is one.
 * An empty text is one empty message (a post with only a file).
 */
export function splitPost(text: string, max = MATTERMOST_POST_MAX): string[] {
  const characters = [...text];
  if (characters.length <= max) return [text];
  const parts: string[] = [];
  for (let at = 0; at < characters.length; ) {
    let end = Math.min(at + max, characters.length);
    if (end < characters.length) {
      const window = characters.slice(at, end).join('');
      const cut = Math.max(window.lastIndexOf('\n'), window.lastIndexOf(' '));
      // A cut in the first half would leave a short part: cut hard instead.
      if (cut > window.length / 2) end = at + [...window.slice(0, cut + 1)].length;
    }
    parts.push(characters.slice(at, end).join(''));
    at = end;
  }
  return parts;
}
