import type { Skill, SkillCatalog } from './skill.js';

/** The catalog's skills sorted by whether they apply on one surface. */
export interface SkillSelection {
  /** For this surface and not disabled on it: these reach the system prompt. */
  readonly applying: readonly Skill[];
  /** For this surface, but named in THREADLINE_SKILLS_DISABLED (for it or for `*`). */
  readonly disabled: readonly Skill[];
  /** How many skills name only other platforms. */
  readonly elsewhere: number;
}

/** The skills of `catalog` on `surface` (a platform, or `cli`), with `disabled` as SkillsConfig holds it. */
export function selectSkills(
  catalog: SkillCatalog,
  surface: string,
  disabled: ReadonlyMap<string, ReadonlySet<string>>,
): SkillSelection {
  const applying: Skill[] = [];
  const disabledHere: Skill[] = [];
  let elsewhere = 0;
  for (const skill of catalog.skills) {
    if (skill.platforms !== undefined && !skill.platforms.includes(surface)) elsewhere++;
    else if (disabled.get(surface)?.has(skill.name) === true || disabled.get('*')?.has(skill.name) === true) disabledHere.push(skill);
    else applying.push(skill);
  }
  return { applying, disabled: disabledHere, elsewhere };
}
