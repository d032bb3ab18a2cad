/** Optional whitespace (RFC 9110: spaces and tabs) around a baggage header's separators and ends. */
const OWS_AROUND_SEPARATOR = /[ \t]*([,;=])[ \t]*/g;
const OWS_AT_ENDS = /^[ \t]+|[ \t]+$/g;

/**
 * A baggage header without its optional whitespace, which the W3C grammar allows around
 * members, '=' and ';' and which does not count toward the 8192-byte limit: what is judged
 * against the limits and handed to the parser.
 */
export function withoutBaggageOws(header: string): string {
  return header.replace(OWS_AROUND_SEPARATOR, '$1').replace(OWS_AT_ENDS, '');
}
