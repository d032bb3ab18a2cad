export { createSkills, type Skills, type SkillsOptions } from './skills.js';
export type { Skill, BrokenSkillFile, SkillCatalog } from './skill.js';
export { parseSkill, type ParsedSkill } from './parse-skill.js';
export { CLI_SURFACE } from '../tool-surface.js';
export { MAX_SKILL_FILES, MAX_SKILL_FILE_BYTES, MAX_SKILLS_PROMPT_BYTES } from './skill-limits.js';
