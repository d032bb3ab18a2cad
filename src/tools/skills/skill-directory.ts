import { closeSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf } from '../../errors.js';
import { parseSkill } from './parse-skill.js';
import { MAX_SKILL_FILES, MAX_SKILL_FILE_BYTES } from './skill-limits.js';
import type { BrokenSkillFile, Skill, SkillCatalog } from './skill.js';

/** Reads at most `maxBytes` bytes of a file; the skills' only file read, replaceable in tests. */
export type ReadSkillFile = (path: string, maxBytes: number) => Buffer;

/** One `.md` file as listed, with what tells a change apart. */
interface ListedFile {
  readonly fileName: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly isFile: boolean;
}

/** The directory as listed: cheap to take, and equal fingerprints mean nothing to re-read. */
export interface SkillDirectoryScan {
  readonly fingerprint: string;
  readonly files: readonly ListedFile[];
  readonly filesOverCap: number;
  readonly directoryProblem: string | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads up to `maxBytes` of the file, however much it grew since it was listed. */
export const readSkillFile: ReadSkillFile = (path, maxBytes) => {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes);
    let length = 0;
    for (let read = -1; read !== 0 && length < maxBytes; length += read) read = readSync(fd, buffer, length, maxBytes - length, null);
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
};

/**
 * Lists the directory's `.md` files (not hidden ones, not sub-directories' contents), the
 * first MAX_SKILL_FILES in name order, with their sizes and mtimes. A missing directory is
 * an empty one; one that cannot be read says why.
 */
export function scanSkillDirectory(dir: string): SkillDirectoryScan {
  let names: string[];
  let dirMtimeMs: number;
  try {
    dirMtimeMs = statSync(dir).mtimeMs;
    names = readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { fingerprint: 'absent', files: [], filesOverCap: 0, directoryProblem: undefined };
    const directoryProblem = `the skills directory ${dir} cannot be read: ${messageOf(error)}`;
    return { fingerprint: `problem:${directoryProblem}`, files: [], filesOverCap: 0, directoryProblem };
  }
  const markdown = names.filter((name) => name.endsWith('.md') && !name.startsWith('.')).sort();
  const files = markdown.slice(0, MAX_SKILL_FILES).map((fileName) => listFile(dir, fileName));
  const stamps = files.map((file) => `${file.fileName}\0${file.size}\0${file.mtimeMs}\0${file.isFile}`);
  const fingerprint = [dirMtimeMs, markdown.length, ...stamps].join('\n');
  return { fingerprint, files, filesOverCap: markdown.length - files.length, directoryProblem: undefined };
}

function listFile(dir: string, fileName: string): ListedFile {
  try {
    const stat = statSync(join(dir, fileName));
    return { fileName, size: stat.size, mtimeMs: stat.mtimeMs, isFile: stat.isFile() };
  } catch {
    // Gone since the listing (or a dangling link): reading it says why.
    return { fileName, size: -1, mtimeMs: -1, isFile: true };
  }
}

/** Reads and parses the files a scan listed. Never throws: a file that fails is listed as broken. */
export function loadSkillCatalog(dir: string, scan: SkillDirectoryScan, readFile: ReadSkillFile): SkillCatalog {
  const byName = new Map<string, Skill>();
  const broken: BrokenSkillFile[] = [];
  for (const file of scan.files) {
    const outcome = loadFile(dir, file, readFile);
    if ('reason' in outcome) {
      broken.push({ fileName: file.fileName, reason: outcome.reason });
      continue;
    }
    const taken = byName.get(outcome.skill.name);
    if (taken !== undefined) {
      broken.push({ fileName: file.fileName, reason: `the name "${outcome.skill.name}" is already used by ${taken.fileName}` });
      continue;
    }
    byName.set(outcome.skill.name, outcome.skill);
  }
  const skills = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { skills, broken, filesOverCap: scan.filesOverCap, directoryProblem: scan.directoryProblem };
}

function loadFile(dir: string, file: ListedFile, readFile: ReadSkillFile): { skill: Skill } | { reason: string } {
  if (!file.isFile) return { reason: 'not a regular file' };
  if (file.size > MAX_SKILL_FILE_BYTES) return { reason: tooLarge(file.size) };
  let bytes: Buffer;
  try {
    bytes = readFile(join(dir, file.fileName), MAX_SKILL_FILE_BYTES + 1);
  } catch (error) {
    return { reason: `cannot be read: ${messageOf(error)}` };
  }
  if (bytes.length > MAX_SKILL_FILE_BYTES) return { reason: tooLarge(undefined) };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { reason: 'not UTF-8 text' };
  }
  try {
    return parseSkill(file.fileName, text);
  } catch (error) {
    // parseSkill reports problems as reasons; this is only a net for a parser surprise.
    return { reason: `cannot be parsed: ${messageOf(error)}` };
  }
}

/** `bytes` is undefined when the file grew past the limit after it was listed. */
function tooLarge(bytes: number | undefined): string {
  const limit = `${MAX_SKILL_FILE_BYTES} bytes`;
  return bytes === undefined ? `too large (over the limit of ${limit})` : `too large (${bytes} bytes; the limit is ${limit})`;
}
