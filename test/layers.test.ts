import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ form layers: a module imports only from its own folder or from a layer
 * below it, so no folder imports another in a cycle. docs/architecture.md draws the same table.
 */
const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Bottom first; `(root)` is the shared vocabulary in src/*.ts (errors, deadlines, env), index.ts aside. */
export const LAYERS: readonly (readonly string[])[] = [
  ['(root)', 'text', 'lease'],
  ['session'],
  ['config'],
  ['telemetry'],
  ['store'],
  ['platforms'],
  ['deliveries'],
  ['tools'],
  ['agent'],
  ['gateway'],
  ['queue'],
  ['forensics'],
  ['operator'],
  ['start'],
  ['cli'],
  ['testing'],
  ['(index)'],
];

const rank = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index] as const)));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The layer a file of src/ belongs to: its top folder, or (root) / (index) for src/*.ts. */
export function folderOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  if (parts.length > 1) return parts[0]!;
  return parts[0] === 'index.ts' ? '(index)' : '(root)';
}

interface Import {
  readonly from: string;
  readonly to: string;
}

/** Every relative import of `file` (static, dynamic and type-only), resolved to a file of src/. */
function importsOf(file: string): Import[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => ({ from: file, to: resolve(dirname(file), name.replace(/\.js$/, '.ts')) }));
}

/** Imports that go up a layer, or sideways into another folder of the same layer. */
export function violations(imports: readonly Import[]): string[] {
  return imports.flatMap(({ from, to }) => {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a === b || (a === '(root)' && b === '(root)')) return [];
    const up = rank.get(b)! >= rank.get(a)!;
    return up ? [`${relative(SRC, from)} (${a}) imports ${relative(SRC, to)} (${b})`] : [];
  });
}

const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf);

describe('the folders of src/', () => {
  it('each has its place in the layers', () => {
    const folders = new Set(files.map(folderOf));
    expect([...folders].filter((folder) => !rank.has(folder))).toEqual([]);
  });

  it('import only from their own folder or a layer below', () => {
    expect(imports.length).toBeGreaterThan(500);
    expect(violations(imports)).toEqual([]);
  });

  it('are refused when a layer imports up, dynamic imports included', () => {
    const store = join(SRC, 'store/store.ts');
    const gateway = join(SRC, 'gateway/gateway.ts');
    expect(violations([{ from: store, to: gateway }])).toEqual(['store/store.ts (store) imports gateway/gateway.ts (gateway)']);
    const dynamic = ts.preProcessFile("const m = await import('../queue/redis-backend.js');", true, true).importedFiles;
    expect(dynamic.map(({ fileName }) => fileName)).toEqual(['../queue/redis-backend.js']);
    expect(violations([{ from: join(SRC, 'text/printable.ts'), to: join(SRC, 'lease/lease.ts') }])).toHaveLength(1);
  });

  it('are each named in docs/architecture.md, bottom layer first', () => {
    const doc = readFileSync(join(SRC, '../docs/architecture.md'), 'utf8');
    const positions = LAYERS.flat()
      .filter((folder) => !folder.startsWith('('))
      .map((folder) => ({ folder, at: doc.indexOf(`\`src/${folder}/\``) }));
    expect(positions.filter(({ at }) => at < 0).map(({ folder }) => folder)).toEqual([]);
    const inDocOrder = [...positions].sort((a, b) => a.at - b.at).map(({ folder }) => folder);
    expect(inDocOrder).toEqual(positions.map(({ folder }) => folder));
  });
});
