/** Optional whitespace (RFC 9110: spaces and tabs). */
const OWS_AT_ENDS = /^[ \t]+|[ \t]+$/g;

/** `piece` without OWS at its ends and around its first '=' (a key's or a property's separator); any later '=' is the value's own. */
function trimPiece(piece: string): string {
  const trimmed = piece.replace(OWS_AT_ENDS, '');
  const separator = trimmed.indexOf('=');
  if (separator < 0) return trimmed;
  return `${trimmed.slice(0, separator).replace(OWS_AT_ENDS, '')}=${trimmed.slice(separator + 1).replace(OWS_AT_ENDS, '')}`;
}

/**
 * A baggage header without its optional whitespace, which the W3C grammar allows around
 * members (','), a member's '=' and its properties (';'), and which does not count toward the
 * 8192-byte limit: what is judged against the limits and handed to the parser. Whitespace
 * inside a value is left as it came.
 */
export function withoutBaggageOws(header: string): string {
  return header
    .split(',')
    .map((member) => member.split(';').map(trimPiece).join(';'))
    .join(',');
}
