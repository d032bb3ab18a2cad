/**
 * Who wrote a history entry, as the model's authority is judged from it. A proven sender is
 * its THREADLINE_ADMINS entry (`platform:user_id`); everything else is a marker starting with
 * `~`, a character no admin entry can hold, so a marker never names an admin.
 */
export type Author = string;

/** A sender whose platform does not prove the user id (an unauthenticated webhook caller, say). */
export function unverifiedAuthor(platform: string): Author {
  return `~unverified:${platform}`;
}

/** Text mirrored into the chat from elsewhere (`threadline send`, another platform). */
export function mirroredAuthor(source: string): Author {
  return `~mirrored:${source}`;
}

/** An entry written before authors were recorded: nobody can say who wrote it. */
export const UNKNOWN_AUTHOR: Author = '~unknown';

/** More distinct authors than an entry keeps: stands for the ones left out, and names no admin. */
export const MANY_AUTHORS: Author = '~many';

/** Most authors an entry records; beyond them MANY_AUTHORS stands in, so entries stay small. */
export const MAX_AUTHORS = 8;

/** The union of `lists`, bounded by MAX_AUTHORS (the rest folded into MANY_AUTHORS), in first-seen order. */
export function unionOfAuthors(...lists: ReadonlyArray<readonly Author[]>): Author[] {
  const all = new Set<Author>();
  for (const list of lists) for (const author of list) all.add(author);
  if (all.size <= MAX_AUTHORS) return [...all];
  return [...[...all].filter((author) => author !== MANY_AUTHORS).slice(0, MAX_AUTHORS - 1), MANY_AUTHORS];
}
