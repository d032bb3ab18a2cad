import type { Logger } from 'pino';
import type { Tool } from '../tool.js';
import type { SkillsConfig } from '../tools-config.js';
import { loadSkillCatalog, readSkillFile, scanSkillDirectory, type ReadSkillFile } from './skill-directory.js';
import { CHANGE_CHECK_INTERVAL_MS, MAX_SKILL_FILES } from './skill-limits.js';
import { selectSkills } from './skill-selection.js';
import { toolSurface } from '../tool-surface.js';
import { EMPTY_CATALOG, type SkillCatalog } from './skill.js';
import { buildSkillsPrompt } from './skills-prompt.js';
import { createSkillsTool } from './skills-tool.js';

/** The skills of a gateway (or of the command line): a tool, and their part of the system prompt. */
export interface Skills {
  /** `skills`: what applies here, what is disabled here, and which files are broken. */
  readonly tool: Tool;
  /**
   * The skills part of the system prompt for the surface of the active context: the
   * session's platform, or `cli` outside any session. '' when no skill applies.
   */
  systemPrompt(): string;
  /** Reads the directory again now, whatever the change check says. */
  reload(): void;
}

/** For tests: the time the change check is paced by, and the file read. */
export interface SkillsOptions {
  /** Milliseconds, monotonic; default performance.now. */
  readonly now?: () => number;
  readonly readFile?: ReadSkillFile;
}

// A prompt is cached per surface; surfaces are the configured platforms plus cli, so this is never reached in practice.
const MAX_CACHED_SURFACES = 64;

/**
 * Skills read from `config.dir`, re-read when the directory changes (its mtime, or a file's
 * mtime or size, looked at no more than once a second) or on reload(). A file that cannot be
 * used is logged once as a warning and listed by the tool; nothing here throws.
 */
export function createSkills(config: SkillsConfig, logger: Logger, options: SkillsOptions = {}): Skills {
  const now = options.now ?? (() => performance.now());
  const readFile = options.readFile ?? readSkillFile;
  const prompts = new Map<string, string>();
  let catalog: SkillCatalog = EMPTY_CATALOG;
  let fingerprint: string | undefined;
  let checkedAt = 0;
  let warned = new Set<string>();

  /** Logs each problem once: a problem still there at the next read is not logged again. */
  const warnOnce = (current: SkillCatalog): void => {
    const problems = new Map<string, () => void>();
    for (const { fileName, reason } of current.broken) {
      problems.set(`file\0${fileName}\0${reason}`, () => logger.warn({ dir: config.dir, skillFile: fileName, reason }, 'skill file skipped'));
    }
    if (current.directoryProblem !== undefined) {
      const reason = current.directoryProblem;
      problems.set(`dir\0${reason}`, () => logger.warn({ dir: config.dir, reason }, 'skills directory unreadable; no skills loaded'));
    }
    if (current.filesOverCap > 0) {
      const count = current.filesOverCap;
      problems.set(`cap\0${count}`, () => logger.warn({ dir: config.dir, unread: count, cap: MAX_SKILL_FILES }, 'skill files past the cap not read'));
    }
    for (const [key, warn] of problems) if (!warned.has(key)) warn();
    warned = new Set(problems.keys());
  };

  const load = (scan = scanSkillDirectory(config.dir)): void => {
    fingerprint = scan.fingerprint;
    catalog = loadSkillCatalog(config.dir, scan, readFile);
    prompts.clear();
    warnOnce(catalog);
  };

  /** The catalog, re-read first if the directory changed since it was read. */
  const current = (): SkillCatalog => {
    const time = now();
    // A clock that went back counts as due, so the check is never stuck.
    if (fingerprint !== undefined && time >= checkedAt && time - checkedAt < CHANGE_CHECK_INTERVAL_MS) return catalog;
    checkedAt = time;
    const scan = scanSkillDirectory(config.dir);
    if (scan.fingerprint !== fingerprint) load(scan);
    return catalog;
  };

  return {
    tool: createSkillsTool(current, config.disabled),
    systemPrompt() {
      const fresh = current();
      const surface = toolSurface();
      let prompt = prompts.get(surface);
      if (prompt === undefined) {
        prompt = buildSkillsPrompt(selectSkills(fresh, surface, config.disabled).applying);
        if (prompts.size >= MAX_CACHED_SURFACES) prompts.clear();
        prompts.set(surface, prompt);
      }
      return prompt;
    },
    reload() {
      checkedAt = now();
      load();
    },
  };
}
