import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { withSession } from '../../../src/session/index.js';
import { createSkills, MAX_SKILLS_PROMPT_BYTES } from '../../../src/tools/skills/index.js';
import { parseDisabledSkills } from '../../../src/tools/tools-config.js';
import { FULL_SESSION, MINIMAL_SESSION } from '../../helpers/sessions.js';
import { captureLogger, countingReader, manualTime, touch, useSkillDirs, writeSkill } from './skill-fixtures.js';

const newDir = useSkillDirs();
const silent = pino({ level: 'silent' });
const NONE_DISABLED = parseDisabledSkills(undefined);
const onTelegram = <T>(fn: () => T): T => withSession(FULL_SESSION, fn);
const onSlack = <T>(fn: () => T): T => withSession(MINIMAL_SESSION, fn);

/** The skill names a prompt holds, in order. */
const namesIn = (prompt: string): string[] => [...prompt.matchAll(/^## (\S+)$/gm)].map((match) => match[1]!);

function surfacesDir(): string {
  const dir = newDir();
  writeSkill(dir, 'everywhere.md', 'description: For all surfaces');
  writeSkill(dir, 'tg.md', 'description: Telegram only\nplatforms: [telegram]');
  writeSkill(dir, 'terminal.md', 'description: Command line only\nplatforms: [cli]');
  writeSkill(dir, 'chat.md', 'description: Chats\nplatforms: [slack, telegram]');
  return dir;
}

describe('the skills part of the system prompt', () => {
  it('holds the skills for the session platform, or for cli outside any session', () => {
    const skills = createSkills({ dir: surfacesDir(), disabled: NONE_DISABLED }, silent);
    expect(namesIn(skills.systemPrompt())).toEqual(['everywhere', 'terminal']);
    expect(namesIn(onTelegram(() => skills.systemPrompt()))).toEqual(['chat', 'everywhere', 'tg']);
    expect(namesIn(onSlack(() => skills.systemPrompt()))).toEqual(['chat', 'everywhere']);
  });

  it('gives each skill its description and body', () => {
    const dir = newDir();
    writeSkill(dir, 'deploy.md', 'name: deploy-notes\ndescription: How we deploy', 'Run make release.');
    const prompt = createSkills({ dir, disabled: NONE_DISABLED }, silent).systemPrompt();
    expect(prompt).toContain('## deploy-notes\n\nHow we deploy\n\nRun make release.\n');
  });

  it('leaves out skills disabled for the platform, and those disabled for `*` everywhere', () => {
    const disabled = parseDisabledSkills('telegram:everywhere,*:chat,*:terminal');
    const skills = createSkills({ dir: surfacesDir(), disabled }, silent);
    expect(namesIn(onTelegram(() => skills.systemPrompt()))).toEqual(['tg']);
    expect(namesIn(onSlack(() => skills.systemPrompt()))).toEqual(['everywhere']);
    expect(namesIn(skills.systemPrompt())).toEqual(['everywhere']);
  });

  it('is empty with a missing directory, and nothing is logged', () => {
    const log = captureLogger();
    const skills = createSkills({ dir: join(newDir(), 'absent'), disabled: NONE_DISABLED }, log.logger);
    expect(skills.systemPrompt()).toBe('');
    expect(log.records).toEqual([]);
  });

  it('ignores files that are not .md, hidden files and sub-directories', () => {
    const dir = newDir();
    writeSkill(dir, 'kept.md', 'description: d');
    writeSkill(dir, 'notes.txt', 'description: d');
    writeSkill(dir, '.draft.md', 'description: d');
    writeSkill(dir, 'kept.md~', 'description: d');
    mkdirSync(join(dir, 'nested'));
    writeSkill(join(dir, 'nested'), 'inner.md', 'description: d');
    mkdirSync(join(dir, 'folder.md'));
    const log = captureLogger();
    expect(namesIn(createSkills({ dir, disabled: NONE_DISABLED }, log.logger).systemPrompt())).toEqual(['kept']);
    expect(log.warnings().map(({ skillFile, reason }) => [skillFile, reason])).toEqual([['folder.md', 'not a regular file']]);
  });

  it('stays under its cap, leaving out whole skills and naming them', () => {
    const dir = newDir();
    for (const name of ['a', 'b', 'c', 'd', 'e']) writeSkill(dir, `${name}.md`, 'description: d', name.repeat(12 * 1024));
    writeSkill(dir, 'f.md', 'description: small');
    const prompt = createSkills({ dir, disabled: NONE_DISABLED }, silent).systemPrompt();
    expect(Buffer.byteLength(prompt)).toBeLessThanOrEqual(MAX_SKILLS_PROMPT_BYTES);
    expect(namesIn(prompt)).toEqual(['a', 'b', 'f']);
    expect(prompt).toMatch(/\(Left out, the skills part being capped at 32768 bytes: c, d, e\.\)\n$/);
  });
});

describe('reading the directory', () => {
  it('reads each file once, and not again while nothing changed, whatever the surface', () => {
    const reader = countingReader();
    const time = manualTime();
    const skills = createSkills({ dir: surfacesDir(), disabled: NONE_DISABLED }, silent, reader);
    const atCli = skills.systemPrompt();
    expect(reader.reads()).toBe(4);
    expect(reader.reads('tg.md')).toBe(1);
    onTelegram(() => skills.systemPrompt());
    time.advance(5000);
    expect(skills.systemPrompt()).toBe(atCli);
    expect(onSlack(() => skills.systemPrompt())).not.toBe(atCli);
    expect(reader.reads()).toBe(4);
  });

  it('picks up a changed file once a second has passed, and only re-reads the directory then', () => {
    const dir = surfacesDir();
    const reader = countingReader();
    const time = manualTime();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, silent, { ...reader, now: time.now });
    expect(skills.systemPrompt()).toContain('Command line only');
    // Same size, new mtime: only the mtime tells.
    const path = writeSkill(dir, 'terminal.md', 'description: Command line ONLY\nplatforms: [cli]');
    touch(path, 2_000_000_000);
    time.advance(999);
    expect(skills.systemPrompt()).toContain('Command line only');
    time.advance(1);
    expect(skills.systemPrompt()).toContain('Command line ONLY');
    expect(reader.reads()).toBe(8);
  });

  it('picks up a new file and forgets a removed one', () => {
    const dir = newDir();
    const time = manualTime();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, silent, { now: time.now });
    expect(skills.systemPrompt()).toBe('');
    writeSkill(dir, 'late.md', 'description: d');
    time.advance(1000);
    expect(namesIn(skills.systemPrompt())).toEqual(['late']);
    rmSync(join(dir, 'late.md'));
    time.advance(1000);
    expect(skills.systemPrompt()).toBe('');
  });

  it('re-reads on reload() even when sizes and mtimes are unchanged', () => {
    const dir = surfacesDir();
    const time = manualTime();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, silent, { now: time.now });
    touch(join(dir, 'everywhere.md'), 1_500_000_000);
    const before = readFileSync(join(dir, 'everywhere.md'), 'utf8');
    expect(skills.systemPrompt()).toContain('For all surfaces');
    writeFileSync(join(dir, 'everywhere.md'), before.replace('For all surfaces', 'For ALL surfaces'));
    touch(join(dir, 'everywhere.md'), 1_500_000_000);
    time.advance(60_000);
    expect(skills.systemPrompt()).toContain('For all surfaces');
    skills.reload();
    expect(skills.systemPrompt()).toContain('For ALL surfaces');
  });
});

describe('broken skill files', () => {
  it('are logged once as warnings naming the file and the reason, and skipped', async () => {
    const dir = newDir();
    writeSkill(dir, 'good.md', 'description: fine');
    writeSkill(dir, 'bad-yaml.md', 'description: [oops');
    writeSkill(dir, 'no-description.md', 'name: nameless');
    writeFileSync(join(dir, 'plain.md'), '# no front matter\n');
    const log = captureLogger();
    const time = manualTime();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, log.logger, { now: time.now });
    expect(namesIn(skills.systemPrompt())).toEqual(['good']);
    onTelegram(() => skills.systemPrompt());
    await skills.tool.run({}, { signal: new AbortController().signal });
    skills.reload();
    writeSkill(dir, 'other.md', 'description: another');
    time.advance(1000);
    skills.systemPrompt();
    const warnings = log.warnings().map(({ msg, skillFile, reason }) => ({ msg, skillFile, reason }));
    expect(warnings).toEqual([
      { msg: 'skill file skipped', skillFile: 'bad-yaml.md', reason: expect.stringMatching(/^bad YAML/) },
      { msg: 'skill file skipped', skillFile: 'no-description.md', reason: '`description` is missing' },
      { msg: 'skill file skipped', skillFile: 'plain.md', reason: expect.stringMatching(/no front matter/) },
    ]);
  });

  it('are logged again when broken anew after a fix', () => {
    const dir = newDir();
    const path = writeSkill(dir, 'flaky.md', 'name: [');
    const log = captureLogger();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, log.logger);
    skills.reload();
    expect(log.warnings()).toHaveLength(1);
    writeSkill(dir, 'flaky.md', 'description: fixed');
    skills.reload();
    expect(namesIn(skills.systemPrompt())).toEqual(['flaky']);
    writeFileSync(path, '---\nname: [\n---\n');
    skills.reload();
    expect(log.warnings()).toHaveLength(2);
  });

  it('refuse a file over 64 KiB without reading it, and a second file with a taken name', () => {
    const dir = newDir();
    writeSkill(dir, 'huge.md', 'description: d', 'x'.repeat(64 * 1024));
    writeSkill(dir, 'a.md', 'name: same\ndescription: first');
    writeSkill(dir, 'b.md', 'name: same\ndescription: second');
    const reader = countingReader();
    const log = captureLogger();
    const prompt = createSkills({ dir, disabled: NONE_DISABLED }, log.logger, reader).systemPrompt();
    expect(prompt).toContain('first');
    expect(prompt).not.toContain('second');
    expect(reader.reads('huge.md')).toBe(0);
    expect(log.warnings().map(({ skillFile, reason }) => [skillFile, reason])).toEqual([
      ['b.md', 'the name "same" is already used by a.md'],
      ['huge.md', expect.stringMatching(/^too large \(65\d\d\d bytes; the limit is 65536 bytes\)$/)],
    ]);
  });

  it('refuse a file that grew past 64 KiB after it was listed', () => {
    const dir = newDir();
    writeSkill(dir, 'growing.md', 'description: d');
    const readFile = (_path: string, maxBytes: number): Buffer => Buffer.alloc(maxBytes, 'x');
    const log = captureLogger();
    createSkills({ dir, disabled: NONE_DISABLED }, log.logger, { readFile }).reload();
    expect(log.warnings().map(({ reason }) => reason)).toEqual(['too large (over the limit of 65536 bytes)']);
  });

  it('read no more than 200 files, and say so once', () => {
    const dir = newDir();
    for (let index = 0; index < 201; index++) writeSkill(dir, `s${String(index).padStart(3, '0')}.md`, 'description: d', '');
    const reader = countingReader();
    const log = captureLogger();
    const skills = createSkills({ dir, disabled: NONE_DISABLED }, log.logger, reader);
    expect(namesIn(skills.systemPrompt())).toHaveLength(200);
    skills.reload();
    expect(reader.reads('s200.md')).toBe(0);
    expect(log.warnings().map((record) => record.msg)).toEqual(['skill files past the cap not read']);
  });

  it('a directory that is not one gives no skills and one warning', () => {
    const notADir = join(newDir(), 'file');
    writeFileSync(notADir, 'x');
    const log = captureLogger();
    const skills = createSkills({ dir: notADir, disabled: NONE_DISABLED }, log.logger);
    expect(skills.systemPrompt()).toBe('');
    skills.reload();
    expect(log.warnings().map((record) => record.msg)).toEqual(['skills directory unreadable; no skills loaded']);
  });
});
