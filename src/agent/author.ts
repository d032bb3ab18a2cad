/**
 * Who wrote a history entry, as the model's authority is judged from it. A proven sender is
 * its THREADLINE_ADMINS entry (`platform:user_id`); everything else is a marker starting with
 * `~`, a character no admin entry can hold, so a marker never names an admin.
 */
export type Author = string;

const MARKER = '~';

/** A sender whose platform does not prove the user id (an unauthenticated webhook caller, say). */
export function unverifiedAuthor(platform: string): Author {
  return `${MARKER}unverified:${platform}`;
}

/** A message that names no user: posted as a chat (a Telegram anonymous admin, a channel). */
export function anonymousAuthor(platform: string): Author {
  return `${MARKER}anonymous:${platform}`;
}

/** Text mirrored into the chat from elsewhere (`threadline send`, another platform). */
export function mirroredAuthor(source: string): Author {
  return `${MARKER}mirrored:${source}`;
}

/** What a tool answered when it may hold text of others (a command's output, an MCP server's page). */
export function toolAuthor(tool: string): Author {
  return `${MARKER}tool:${tool}`;
}

/** An entry written before authors were recorded: nobody can say who wrote it. */
export const UNKNOWN_AUTHOR: Author = `${MARKER}unknown`;

/** More distinct authors than an entry keeps: stands for the ones left out, and names no admin. */
export const MANY_AUTHORS: Author = `${MARKER}many`;

/** Most authors an entry records; beyond them MANY_AUTHORS stands in, so entries stay small. */
export const MAX_AUTHORS = 8;

/** Whether `author` is a proven sender (`platform:user_id`), not a marker. */
export function isSender(author: Author): boolean {
  return !author.startsWith(MARKER);
}

/** Whether `author` is a sender the platform did not prove: with THREADLINE_ADMINS=*, still everyone. */
export function isUnverified(author: Author): boolean {
  return author.startsWith(`${MARKER}unverified:`);
}

/** The union of `lists`, bounded by MAX_AUTHORS (the rest folded into MANY_AUTHORS), in first-seen order. */
export function unionOfAuthors(...lists: ReadonlyArray<readonly Author[]>): Author[] {
  const all = new Set<Author>();
  for (const list of lists) for (const author of list) all.add(author);
  if (all.size <= MAX_AUTHORS) return [...all];
  return [...[...all].filter((author) => author !== MANY_AUTHORS).slice(0, MAX_AUTHORS - 1), MANY_AUTHORS];
}

/** `author` as a chat is told of it. */
export function describeAuthor(author: Author): string {
  if (isSender(author)) return author;
  const [kind, ...rest] = author.slice(MARKER.length).split(':');
  const what = rest.join(':');
  switch (kind) {
    case 'unverified':
      return `an unverified ${what} sender`;
    case 'anonymous':
      return `an anonymous ${what} sender`;
    case 'mirrored':
      return `text sent in from ${what}`;
    case 'tool':
      return `what ${what} answered`;
    case 'many':
      return 'more senders';
    default:
      return 'messages of unknown authors (written before authors were recorded)';
  }
}
