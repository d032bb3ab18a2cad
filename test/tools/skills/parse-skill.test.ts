import { describe, expect, it } from 'vitest';
import { parseSkill } from '../../../src/tools/skills/index.js';

const file = (frontMatter: string, body = 'Body text.'): string => `---\n${frontMatter}\n---\n${body}\n`;

function reasonOf(fileName: string, text: string): string {
  const parsed = parseSkill(fileName, text);
  if (!('reason' in parsed)) return expect.fail(`expected ${fileName} to be refused`);
  return parsed.reason;
}

describe('parseSkill', () => {
  it('reads name, description, platforms and the body', () => {
    const parsed = parseSkill('deploy.md', file('name: deploy-notes\ndescription: How we deploy\nplatforms: [telegram, slack]', '\nStep one.\n\nStep two.'));
    expect(parsed).toEqual({
      skill: { name: 'deploy-notes', description: 'How we deploy', platforms: ['telegram', 'slack'], body: 'Step one.\n\nStep two.', fileName: 'deploy.md' },
    });
  });

  it('names the skill after its file when `name` is absent, and applies it everywhere without `platforms`', () => {
    expect(parseSkill('on-call.md', file('description: Who to page'))).toEqual({
      skill: { name: 'on-call', description: 'Who to page', platforms: undefined, body: 'Body text.', fileName: 'on-call.md' },
    });
  });

  it('accepts CRLF line ends, a byte order mark, `...` closing the front matter, and a body holding `---`', () => {
    const parsed = parseSkill('x.md', '\uFEFF---\r\ndescription: d\r\n...\r\nAbove\r\n---\r\nBelow');
    expect(parsed).toMatchObject({ skill: { name: 'x', description: 'd', body: 'Above\n---\nBelow' } });
  });

  it('refuses a file without front matter, or whose front matter is not closed', () => {
    expect(reasonOf('a.md', '# Just markdown\n')).toMatch(/no front matter/);
    expect(reasonOf('a.md', '---\ndescription: d\nbody without an end')).toMatch(/not closed/);
  });

  it('refuses bad YAML with the parser message, and duplicate keys', () => {
    expect(reasonOf('a.md', file('description: [unclosed\nname: a'))).toMatch(/^bad YAML in the front matter: .+/);
    expect(reasonOf('a.md', file('description: one\ndescription: two'))).toMatch(/bad YAML.*unique/i);
    // Only the first line of the parser's message, not its code excerpt.
    expect(reasonOf('a.md', file('description: [unclosed\nname: a'))).not.toContain('\n');
  });

  it('refuses an alias bomb instead of expanding it', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', 'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]', 'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]', 'description: *c'];
    expect(reasonOf('a.md', file(bomb.join('\n')))).toMatch(/bad YAML/);
  });

  it('refuses front matter that is not a mapping', () => {
    expect(reasonOf('a.md', file('- description'))).toMatch(/must be a YAML mapping/);
    expect(reasonOf('a.md', file(''))).toMatch(/must be a YAML mapping/);
  });

  it('refuses a missing, empty or non-text description', () => {
    expect(reasonOf('a.md', file('name: a'))).toBe('`description` is missing');
    expect(reasonOf('a.md', file('description: "  "'))).toMatch(/non-empty text/);
    expect(reasonOf('a.md', file('description: 42'))).toMatch(/non-empty text/);
    expect(reasonOf('a.md', file(`description: ${'x'.repeat(1025)}`))).toMatch(/over 1024 characters/);
  });

  it('refuses names outside [A-Za-z0-9_.-], whether given or taken from the file name', () => {
    expect(reasonOf('a.md', file('name: has space\ndescription: d'))).toMatch(/`name` is not a skill name/);
    expect(reasonOf('a.md', file('name: 7\ndescription: d'))).toMatch(/`name` is not a skill name/);
    expect(reasonOf('my notes.md', file('description: d'))).toMatch(/^the file name "my notes" is not a skill name .*; set `name:`$/);
    expect(parseSkill('my notes.md', file('name: my-notes\ndescription: d'))).toMatchObject({ skill: { name: 'my-notes' } });
  });

  it('refuses platforms that are not a non-empty list of platform names', () => {
    expect(reasonOf('a.md', file('description: d\nplatforms: telegram'))).toMatch(/must be a list/);
    expect(reasonOf('a.md', file('description: d\nplatforms: []'))).toMatch(/is empty/);
    expect(reasonOf('a.md', file('description: d\nplatforms: [telegram, 3]'))).toMatch(/holds 3, not a platform name/);
    expect(reasonOf('a.md', file('description: d\nplatforms: [Telegram]'))).toMatch(/not a platform name/);
    expect(parseSkill('a.md', file('description: d\nplatforms: [cli, cli]'))).toMatchObject({ skill: { platforms: ['cli'] } });
  });
});
