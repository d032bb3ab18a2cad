import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/errors.js';

/** The documentation stays in step with the code: codes, settings, links, and the tests it cites. */
const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : '');

const README_MAX_BYTES = 15 * 1024;
const markdownFiles = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

function filesUnder(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return filesUnder(path, extensions);
    return extensions.some((extension) => entry.name.endsWith(extension)) ? [path] : [];
  });
}

/** Links outside fenced code blocks, as [text](target). */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/i.test(target));
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function headingAnchors(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return new Set(
    [...prose.matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
      match[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('error codes', () => {
  const documented = read('README.md') + read('docs/errors.md');

  it.each(Object.keys(ERROR_CODES))('documents %s', (code) => {
    expect(documented).toContain(`\`${code}\``);
  });

  it('lists in docs/errors.md only real codes, each with the HTTP status it maps to', () => {
    const rows = [...read('docs/errors.md').matchAll(/^\| `(\w+)` \| (\d{3}) \|/gm)];
    expect(rows.length).toBe(Object.keys(ERROR_CODES).length);
    for (const [, code, status] of rows) {
      expect(Object.keys(ERROR_CODES), code).toContain(code);
      expect(Number(status), code).toBe(ERROR_CODES[code as keyof typeof ERROR_CODES].status);
    }
  });
});

describe('docs/configuration.md', () => {
  // Every setting the code reads must be in the generated settings reference.
  const configuration = read('docs/configuration.md');
  const variables = new Set(
    filesUnder('src', ['.ts']).flatMap((file) =>
      [...read(file).matchAll(/\b((?:THREADLINE|OTEL)_[A-Z0-9_]*[A-Z0-9])\b/g)].map((match) => match[1]!),
    ),
  );

  it('finds the variables the source reads', () => {
    expect(variables.size).toBeGreaterThan(10);
  });

  it.each([...variables])('documents %s', (variable) => {
    expect(configuration).toMatch(new RegExp(`\`${variable}\`|\`_${variable.replace(/^THREADLINE_SESSION_/, '')}\``));
  });
});

describe('docs/operations.md', () => {
  // Every instrument the code creates is in the metrics table, by its OpenTelemetry name.
  const operations = read('docs/operations.md');
  const instruments = new Set(
    filesUnder('src', ['.ts']).flatMap((file) =>
      [...read(file).matchAll(/\.create(?:Counter|UpDownCounter|Histogram|Gauge|Observable\w+)\(\s*'([^']+)'/g)].map((match) => match[1]!),
    ),
  );

  it('finds the instruments the source creates', () => {
    expect(instruments.size).toBeGreaterThan(1);
  });

  it.each([...instruments])('documents the instrument %s', (name) => {
    expect(operations).toContain(`| \`${name}\` |`);
  });
});

describe('README.md', () => {
  it(`is at most ${README_MAX_BYTES / 1024} KB`, () => {
    expect(Buffer.byteLength(read('README.md'))).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('shows the integration-test example that test/testing/example.test.ts runs, importing threadline/testing', () => {
    const example = read('test/testing/example.test.ts')
      .replace(/^\/\/.*\n/, '')
      .replace("from '../../src/testing/index.js'", "from 'threadline/testing'");
    const blocks = [...read('README.md').matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((match) => match[1]);
    expect(blocks).toContain(example);
  });
});

describe('links', () => {
  it.each(markdownFiles)('every relative link in %s resolves to a file, and its anchor to a heading', (file) => {
    const broken: string[] = [];
    for (const link of relativeLinks(read(file))) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? file : relative(root, join(root, dirname(file), path));
      if (!existsSync(join(root, target))) broken.push(`${link}: no file ${target}`);
      else if (anchor !== undefined && target.endsWith('.md') && !headingAnchors(read(target)).has(anchor)) broken.push(`${link}: no heading #${anchor} in ${target}`);
    }
    expect(broken).toEqual([]);
  });
});

describe('docs/context-pitfalls.md', () => {
  const pitfalls = read('docs/context-pitfalls.md')
    .split(/^## /m)
    .slice(1)
    .map((section) => ({ name: section.slice(0, section.indexOf('\n')), body: section }));

  it('names the pitfalls', () => {
    expect(pitfalls.length).toBeGreaterThanOrEqual(20);
  });

  it.each(pitfalls.map((pitfall) => [pitfall.name, pitfall.body] as const))('%s: cites tests that exist, by file and name', (_name, body) => {
    const citations = [...body.matchAll(/^- \[`[^`]+`\]\(\.\.\/(test\/[^)]+)\): (.+)$/gm)];
    expect(citations.length).toBeGreaterThan(0);
    for (const [, file, rest] of citations) {
      const names = [...rest!.matchAll(/“([^”]+)”/g)].map((match) => match[1]!);
      expect(names.length, file).toBeGreaterThan(0);
      const source = read(file!);
      for (const name of names) expect(source, `${file} has no test "${name}"`).toContain(name);
    }
  });
});

describe('source comments', () => {
  // Code refers to a pitfall by its name in docs/context-pitfalls.md, never by a number from elsewhere.
  const self = relative(root, fileURLToPath(import.meta.url));
  const sources = ['src', 'test', 'bench'].flatMap((dir) => filesUnder(dir, ['.ts', '.mts', '.mjs', '.js'])).filter((file) => file !== self);

  it('cite no numbered lesson', () => {
    const citing = sources.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, index) => (/\blessons?\b/i.test(line) ? [`${file}:${index + 1}`] : [])),
    );
    expect(sources.length).toBeGreaterThan(50);
    expect(citing).toEqual([]);
  });
});

describe('docs/decisions.md', () => {
  // A package the table names must be one the project depends on; `@scope/` carries over a row.
  const manifest = JSON.parse(read('package.json')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const installed = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})]);
  const section = read('docs/decisions.md').split(/^## Dependencies and why$/m)[1] ?? '';
  const named = [...section.matchAll(/^\| ([^|]+) \|/gm)].flatMap((row) => {
    let scope = '';
    return [...row[1]!.matchAll(/`([^`]+)`/g)].flatMap((match) => {
      const name = match[1]!;
      if (name.startsWith('@')) scope = name.slice(0, name.indexOf('/') + 1);
      if (name.startsWith('-') || name.includes('*')) return [];
      return [name.startsWith('@') || installed.has(name) ? name : `${scope}${name}`];
    });
  });

  it('names packages in its dependency table', () => {
    expect(named.length).toBeGreaterThan(20);
  });

  it.each(named)('depends on %s', (name) => {
    expect(installed).toContain(name);
  });

  it('keeps no leftover comment or placeholder for the writers', () => {
    expect(read('docs/decisions.md')).not.toContain('<!--');
  });
});
