/** W3C Trace Context limits on tracestate: 32 list members, and 512 characters propagated. */
export const MAX_TRACESTATE_MEMBERS = 32;
export const MAX_TRACESTATE_LENGTH = 512;
/** Members longer than this go first when a tracestate must be cut (W3C Trace Context, 3.3.1.5). */
const LONG_MEMBER_LENGTH = 128;

// The list-member grammar of W3C Trace Context 3.3.1.3: a simple key, or tenant@system; a
// value of printable ASCII but ',' and '=', not ending in a space.
const KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * A tracestate header (several joined with ',') as the W3C spec has a receiver read it:
 * undefined when it is not a valid list (a malformed member, a repeated key, more than 32
 * members), since a tracestate that cannot be parsed must not be passed on; else its members
 * without optional whitespace and empty members, cut to 512 characters member by member:
 * members over 128 characters first (from the end), then members from the end.
 */
export function readTracestate(header: string): string | undefined {
  const members = header
    .split(',')
    .map((member) => member.replace(/^[ \t]+|[ \t]+$/g, ''))
    .filter((member) => member !== '');
  if (members.length === 0 || members.length > MAX_TRACESTATE_MEMBERS) return undefined;
  const keys = new Set<string>();
  for (const member of members) {
    const separator = member.indexOf('=');
    const key = member.slice(0, separator);
    if (separator < 0 || !KEY.test(key) || !VALUE.test(member.slice(separator + 1)) || keys.has(key)) return undefined;
    keys.add(key);
  }
  let length = members.length - 1;
  for (const member of members) length += member.length;
  while (length > MAX_TRACESTATE_LENGTH) {
    const long = lastIndexWhere(members, (member) => member.length > LONG_MEMBER_LENGTH);
    const [removed] = members.splice(long === -1 ? members.length - 1 : long, 1);
    length -= removed!.length + (members.length === 0 ? 0 : 1);
  }
  return members.length === 0 ? undefined : members.join(',');
}

function lastIndexWhere(members: readonly string[], test: (member: string) => boolean): number {
  for (let index = members.length - 1; index >= 0; index--) if (test(members[index]!)) return index;
  return -1;
}
