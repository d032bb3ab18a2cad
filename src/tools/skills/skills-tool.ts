import { Type } from 'typebox';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import { MAX_SKILL_FILES } from './skill-limits.js';
import { selectSkills } from './skill-selection.js';
import { toolSurface } from '../tool-surface.js';
import type { SkillCatalog } from './skill.js';

/** The tool's answer stays under this many characters, however many skills there are. */
const MAX_ANSWER_CHARS = 16 * 1024;
const MAX_LINE_CHARS = 240;

/**
 * The `skills` tool: lists the skills that apply where it is called (the session's platform,
 * or `cli`), those disabled there, and the files that could not be used with the reason, so
 * a broken file is seen rather than silently missing. `catalog` reads the directory afresh
 * when it changed.
 */
export function createSkillsTool(catalog: () => SkillCatalog, disabled: ReadonlyMap<string, ReadonlySet<string>>): Tool {
  return defineTool({
    name: 'skills',
    description: 'Lists the skills (operator instructions in the system prompt) that apply in this chat, and skill files that are broken.',
    input: Type.Object({}, { additionalProperties: false }),
    adminOnly: false,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    run: async () => ({ text: describeSkills(catalog(), toolSurface(), disabled) }),
  });
}

/** The tool's answer for `surface`. */
export function describeSkills(catalog: SkillCatalog, surface: string, disabled: ReadonlyMap<string, ReadonlySet<string>>): string {
  const selection = selectSkills(catalog, surface, disabled);
  const lines: string[] = [];
  if (selection.applying.length === 0) lines.push(`No skills apply on ${surface}.`);
  else lines.push(`Skills on ${surface} (${selection.applying.length}):`);
  for (const skill of selection.applying) lines.push(`- ${skill.name}: ${oneLine(skill.description)}`);
  if (selection.disabled.length > 0) {
    lines.push(`Disabled on ${surface} by THREADLINE_SKILLS_DISABLED: ${selection.disabled.map((skill) => skill.name).join(', ')}.`);
  }
  if (selection.elsewhere > 0) lines.push(`${selection.elsewhere} more only for other platforms.`);
  if (catalog.directoryProblem !== undefined) lines.push(`${capitalized(oneLine(catalog.directoryProblem))}.`);
  if (catalog.broken.length > 0) lines.push(`Files that could not be used (${catalog.broken.length}):`);
  for (const file of catalog.broken) lines.push(`- ${file.fileName}: ${oneLine(file.reason)}`);
  if (catalog.filesOverCap > 0) lines.push(`${catalog.filesOverCap} more .md files were not read: at most ${MAX_SKILL_FILES} are.`);
  return capped(lines);
}

/** Whitespace folded and long text shortened, so one entry stays one line. */
function oneLine(text: string): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  return folded.length <= MAX_LINE_CHARS ? folded : `${folded.slice(0, MAX_LINE_CHARS - 1)}…`;
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Whole lines up to MAX_ANSWER_CHARS, then how many were cut. */
function capped(lines: readonly string[]): string {
  let text = '';
  for (const [index, line] of lines.entries()) {
    if (text.length + line.length + 1 > MAX_ANSWER_CHARS - 40) return `${text}… and ${lines.length - index} more lines.`;
    text += `${line}\n`;
  }
  return text.trimEnd();
}
