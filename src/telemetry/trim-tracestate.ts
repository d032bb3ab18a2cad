/** W3C Trace Context limits on tracestate: 32 list members and 512 characters in all. */
export const MAX_TRACESTATE_MEMBERS = 32;
export const MAX_TRACESTATE_LENGTH = 512;
/** Members longer than this go first when a tracestate must be cut (W3C Trace Context, 3.3.1.5). */
const LONG_MEMBER_LENGTH = 128;

/**
 * A tracestate value within the W3C limits, cut member by member as the spec asks: members
 * over 128 characters are removed first (from the end), then members from the end, until
 * it fits. Optional whitespace around members is removed; empty members are skipped. '' when
 * nothing is left.
 */
export function trimTracestate(header: string): string {
  const members = header
    .split(',')
    .map((member) => member.replace(/^[ \t]+|[ \t]+$/g, ''))
    .filter((member) => member !== '');
  let length = joinedLength(members);
  while (members.length > MAX_TRACESTATE_MEMBERS || length > MAX_TRACESTATE_LENGTH) {
    const long = lastIndexWhere(members, (member) => member.length > LONG_MEMBER_LENGTH);
    const [removed] = members.splice(long === -1 ? members.length - 1 : long, 1);
    length -= removed!.length + (members.length === 0 ? 0 : 1);
  }
  return members.join(',');
}

function joinedLength(members: readonly string[]): number {
  let length = Math.max(0, members.length - 1);
  for (const member of members) length += member.length;
  return length;
}

function lastIndexWhere(members: readonly string[], test: (member: string) => boolean): number {
  for (let index = members.length - 1; index >= 0; index--) if (test(members[index]!)) return index;
  return -1;
}
