import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { withSession } from '../../../src/session/index.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import { createSkills } from '../../../src/tools/skills/index.js';
import { describeSkills } from '../../../src/tools/skills/skills-tool.js';
import { parseDisabledSkills } from '../../../src/tools/tools-config.js';
import { rejectionOf, assertThreadlineError } from '../../helpers/errors.js';
import { FULL_SESSION } from '../../helpers/sessions.js';
import { useSkillDirs, writeSkill } from './skill-fixtures.js';

const newDir = useSkillDirs();
const silent = pino({ level: 'silent' });
const refuseAdmin = async (): Promise<boolean> => expect.fail('the skills tool is for everyone');
const call = (tool: Parameters<typeof executeTool>[0], args: unknown = {}) =>
  executeTool(tool, args, { signal: new AbortController().signal, authorize: refuseAdmin });

function mixedDir(): string {
  const dir = newDir();
  writeSkill(dir, 'deploy.md', 'name: deploy-notes\ndescription: |\n  How we\n  deploy');
  writeSkill(dir, 'tg.md', 'description: Telegram etiquette\nplatforms: [telegram]');
  writeSkill(dir, 'local.md', 'description: Shell habits\nplatforms: [cli]');
  writeSkill(dir, 'quiet.md', 'description: Muted here');
  writeSkill(dir, 'broken.md', 'description: [oops');
  return dir;
}

describe('the skills tool', () => {
  it("lists, for the session's platform, the skills that apply, those disabled, and the broken files with their reason", async () => {
    const skills = createSkills({ dir: mixedDir(), disabled: parseDisabledSkills('telegram:quiet') }, silent);
    const { text } = await withSession(FULL_SESSION, () => call(skills.tool));
    expect(text.split('\n')).toEqual([
      'Skills on telegram (2):',
      '- deploy-notes: How we deploy',
      '- tg: Telegram etiquette',
      'Disabled on telegram by THREADLINE_SKILLS_DISABLED: quiet.',
      '1 more only for other platforms.',
      'Files that could not be used (1):',
      expect.stringMatching(/^- broken\.md: bad YAML in the front matter: .+/),
    ]);
  });

  it('lists the cli skills outside any session', async () => {
    const skills = createSkills({ dir: mixedDir(), disabled: parseDisabledSkills('*:deploy-notes') }, silent);
    const { text } = await call(skills.tool);
    expect(text).toMatch(/^Skills on cli \(2\):\n- local: Shell habits\n- quiet: Muted here\nDisabled on cli by THREADLINE_SKILLS_DISABLED: deploy-notes\.\n/);
  });

  it('says when no skill applies and when the directory cannot be read', async () => {
    const notADir = join(newDir(), 'file');
    writeFileSync(notADir, 'x');
    const { text } = await call(createSkills({ dir: notADir, disabled: new Map() }, silent).tool);
    expect(text).toMatch(/^No skills apply on cli\.\nThe skills directory .*file cannot be read: .*ENOTDIR/);
  });

  it('keeps its answer under 16 KiB, however many skills there are', () => {
    const catalog = {
      skills: Array.from({ length: 200 }, (_, index) => ({
        name: `s${index}`,
        description: 'd'.repeat(1000),
        platforms: undefined,
        body: '',
        fileName: `s${index}.md`,
      })),
      broken: [],
      filesOverCap: 0,
      directoryProblem: undefined,
    };
    const text = describeSkills(catalog, 'cli', new Map());
    expect(text.length).toBeLessThanOrEqual(16 * 1024);
    expect(text).toMatch(/^- s\d+: d{239}…\n… and \d+ more lines\.$/m);
  });

  it('takes no arguments', async () => {
    const skills = createSkills({ dir: newDir(), disabled: new Map() }, silent);
    assertThreadlineError(await rejectionOf(call(skills.tool, { name: 'x' })), 'TL_TOOL_INPUT');
    expect(skills.tool.adminOnly).toBe(false);
  });
});
