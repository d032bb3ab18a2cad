/** One skill: instructions from a Markdown file, added to the system prompt where it applies. */
export interface Skill {
  /** From `name:`, or the file name without `.md`; unique in the directory. */
  readonly name: string;
  readonly description: string;
  /** The surfaces it applies to (`telegram`, `slack`, `cli`...); undefined means every one. */
  readonly platforms: readonly string[] | undefined;
  /** The Markdown after the front matter, trimmed. */
  readonly body: string;
  readonly fileName: string;
}

/** A file in the skills directory that could not be used, and why, in words a user can act on. */
export interface BrokenSkillFile {
  readonly fileName: string;
  readonly reason: string;
}

/** What the skills directory held at its last read. */
export interface SkillCatalog {
  /** Sorted by name. */
  readonly skills: readonly Skill[];
  readonly broken: readonly BrokenSkillFile[];
  /** `.md` files past the MAX_SKILL_FILES cap, left unread. */
  readonly filesOverCap: number;
  /** Why the directory itself could not be read (not a directory, no permission); undefined when fine or absent. */
  readonly directoryProblem: string | undefined;
}

export const EMPTY_CATALOG: SkillCatalog = { skills: [], broken: [], filesOverCap: 0, directoryProblem: undefined };
