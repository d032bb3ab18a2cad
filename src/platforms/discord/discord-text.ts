import { createHash } from 'node:crypto';

/** The longest content a Discord message holds, in characters. */
export const DISCORD_TEXT_MAX = 2000;
/** Discord keeps a nonce of at most 25 characters. */
const NONCE_LENGTH = 25;

/**
 * `text` as the messages Discord takes: pieces of at most 2,000 characters, cut after a line
 * break or a space where one falls in the second half of a piece, never inside a surrogate
 * pair. An empty text is one empty piece (a message that carries only a file).
 */
export function discordPieces(text: string): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > DISCORD_TEXT_MAX) {
    let cut = DISCORD_TEXT_MAX;
    // A low surrogate at the cut would leave half a character on each side.
    if (/[\uDC00-\uDFFF]/.test(rest[cut]!)) cut--;
    const window = rest.slice(0, cut);
    const breakAt = Math.max(window.lastIndexOf('\n'), window.lastIndexOf(' '));
    if (breakAt >= DISCORD_TEXT_MAX / 2) cut = breakAt + 1;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

/**
 * The nonce of piece `index` of delivery `deliveryId`: sent with `enforce_nonce`, so a retry
 * of a send whose answer was lost gets the message already created back instead of a second one
 * (Discord remembers nonces for a few minutes).
 */
export function discordNonce(deliveryId: string, index: number): string {
  return createHash('sha256').update(`${deliveryId}#${index}`).digest('base64url').slice(0, NONCE_LENGTH);
}
