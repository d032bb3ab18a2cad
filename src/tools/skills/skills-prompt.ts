import { MAX_SKILLS_PROMPT_BYTES } from './skill-limits.js';
import type { Skill } from './skill.js';

const HEADING = '# Skills\n\nInstructions the operator added. Follow a skill when the conversation calls for it.\n';
// Room kept for the note naming what did not fit, so the whole part stays under the cap.
const NOTE_RESERVE_BYTES = 1024;

/**
 * The skills part of the system prompt: a heading, then each skill (name, description, body)
 * in order, whole or not at all, within MAX_SKILLS_PROMPT_BYTES. Skills that do not fit are
 * named in a closing note, so the model (and whoever reads the prompt) knows they exist.
 * Empty when there is no skill.
 */
export function buildSkillsPrompt(skills: readonly Skill[]): string {
  if (skills.length === 0) return '';
  const budget = MAX_SKILLS_PROMPT_BYTES - NOTE_RESERVE_BYTES;
  let prompt = HEADING;
  let bytes = Buffer.byteLength(prompt);
  const leftOut: string[] = [];
  for (const skill of skills) {
    const section = `\n## ${skill.name}\n\n${skill.description}\n${skill.body === '' ? '' : `\n${skill.body}\n`}`;
    const size = Buffer.byteLength(section);
    if (bytes + size > budget) {
      leftOut.push(skill.name);
      continue;
    }
    prompt += section;
    bytes += size;
  }
  return leftOut.length === 0 ? prompt : prompt + leftOutNote(leftOut);
}

/** Names what was left out, as many names as fit the reserve, then a count. */
function leftOutNote(names: readonly string[]): string {
  const start = `\n(Left out, the skills part being capped at ${MAX_SKILLS_PROMPT_BYTES} bytes: `;
  let note = start;
  let listed = 0;
  for (const name of names) {
    const next = `${listed === 0 ? '' : ', '}${name}`;
    // 40 bytes kept for the ", and N more.)" ending.
    if (Buffer.byteLength(note + next) > NOTE_RESERVE_BYTES - 40) break;
    note += next;
    listed++;
  }
  const rest = names.length - listed;
  return `${note}${rest === 0 ? '' : `${listed === 0 ? '' : ', and '}${rest} more`}.)\n`;
}
