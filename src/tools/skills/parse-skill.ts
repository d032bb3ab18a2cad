import { parseDocument } from 'yaml';
import { MAX_DESCRIPTION_CHARS, PLATFORM_NAME_PATTERN, SKILL_NAME_PATTERN } from './skill-limits.js';
import type { Skill } from './skill.js';

/** A parsed skill, or the reason the file cannot be one. */
export type ParsedSkill = { readonly skill: Skill } | { readonly reason: string };

const FENCE = /^---[ \t]*$/;
const CLOSING_FENCE = /^(?:---|\.\.\.)[ \t]*$/;
// A YAML error message carries a code excerpt over several lines; its first line says enough.
const firstLine = (text: string): string => text.split('\n', 1)[0]!.trim();

/**
 * Parses a skill file: YAML front matter between `---` lines, then the Markdown body. Never
 * throws: whatever is wrong comes back as a `reason` naming the field or the YAML error.
 */
export function parseSkill(fileName: string, text: string): ParsedSkill {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (!FENCE.test(lines[0] ?? '')) return { reason: 'no front matter: the file must start with a `---` line' };
  const end = lines.findIndex((line, index) => index > 0 && CLOSING_FENCE.test(line));
  if (end === -1) return { reason: 'the front matter is not closed by a `---` line' };

  const document = parseDocument(lines.slice(1, end).join('\n'), { uniqueKeys: true, prettyErrors: false });
  const [error] = document.errors;
  if (error !== undefined) return { reason: `bad YAML in the front matter: ${firstLine(error.message)}` };
  let fields: unknown;
  try {
    fields = document.toJS({ maxAliasCount: 50 });
  } catch (cause) {
    // Alias expansion past the cap (a "billion laughs" file) lands here.
    return { reason: `bad YAML in the front matter: ${firstLine(cause instanceof Error ? cause.message : String(cause))}` };
  }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    return { reason: 'the front matter must be a YAML mapping (`description: ...`)' };
  }
  return checkFields(fileName, fields as Record<string, unknown>, lines.slice(end + 1).join('\n').trim());
}

function checkFields(fileName: string, fields: Record<string, unknown>, body: string): ParsedSkill {
  const { name = fileName.replace(/\.md$/, ''), description, platforms } = fields;
  if (typeof name !== 'string' || !SKILL_NAME_PATTERN.test(name)) {
    const given = fields['name'] === undefined ? `the file name "${String(name).slice(0, 80)}"` : '`name`';
    return { reason: `${given} is not a skill name (1 to 64 of A-Z a-z 0-9 _ . -); set \`name:\`` };
  }
  if (description === undefined) return { reason: '`description` is missing' };
  if (typeof description !== 'string' || description.trim() === '') return { reason: '`description` must be non-empty text' };
  if (description.length > MAX_DESCRIPTION_CHARS) return { reason: `\`description\` is over ${MAX_DESCRIPTION_CHARS} characters` };
  const checkedPlatforms = checkPlatforms(platforms);
  if (typeof checkedPlatforms === 'string') return { reason: checkedPlatforms };
  return { skill: { name, description: description.trim(), platforms: checkedPlatforms, body, fileName } };
}

/** The platforms list, or a reason it is unusable. */
function checkPlatforms(platforms: unknown): readonly string[] | undefined | string {
  if (platforms === undefined) return undefined;
  if (!Array.isArray(platforms)) return '`platforms` must be a list, like [telegram, slack]; leave it out for every platform';
  if (platforms.length === 0) return '`platforms` is empty; leave it out for every platform';
  for (const platform of platforms) {
    if (typeof platform !== 'string' || !PLATFORM_NAME_PATTERN.test(platform)) {
      return `\`platforms\` holds ${JSON.stringify(platform)?.slice(0, 40)}, not a platform name like telegram, slack or cli`;
    }
  }
  return [...new Set(platforms as string[])];
}
