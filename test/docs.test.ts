import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/errors.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

describe('README', () => {
  it.each(Object.keys(ERROR_CODES))('documents error code %s', (code) => {
    expect(readme).toContain(`\`${code}\``);
  });

  // Every knob the code reads must be in the configuration table.
  const variables = new Set(
    sourceFiles(new URL('../src', import.meta.url).pathname).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\b((?:THREADLINE|OTEL)_[A-Z0-9_]*[A-Z0-9])\b/g)].map((match) => match[1]!),
    ),
  );

  it('finds the variables the source reads', () => {
    expect(variables.size).toBeGreaterThan(10);
  });

  it.each([...variables])('documents %s', (variable) => {
    expect(readme).toMatch(new RegExp(`\`${variable}\`|\`_${variable.replace(/^THREADLINE_SESSION_/, '')}\``));
  });
});
