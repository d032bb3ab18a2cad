// The package as a user gets it: packed, installed into an empty project, its README example
// run there through `threadline/testing`, its types checked, its bin answering, its README's
// links resolving inside it.
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { useTempDir } from '../helpers/temp-dir.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'node_modules', '.bin');
// Two installed projects' node_modules to remove: minutes on a loaded machine.
const tempRoot = useTempDir('pack', 300_000);

/** The environment of the commands: without this vitest's own variables, which would make the inner vitest a worker of this one. */
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST') && key !== 'NODE_OPTIONS'));

function inDir(cwd: string, command: string, args: readonly string[]) {
  return run(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
}

/** The README's integration-test example: the TypeScript block that imports threadline/testing. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!).find((code) => code.includes("from 'threadline/testing'"));
  if (block === undefined) throw new Error("README.md has no ```ts block importing from 'threadline/testing'");
  return block;
}

interface PackedFile {
  readonly path: string;
}

/** Relative link targets in `markdown` outside fenced code blocks, without their anchors. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1]!.split('#')[0]!)
    .filter((target) => target !== '' && !/^[a-z]+:/i.test(target));
}

let packedFiles: string[];
/** The packed tarball's path. */
let tarball: string;
/** `tar -tv` of the tarball: each entry's mode string by its path inside the package. */
let packedModes: Map<string, string>;
let consumer: string;

beforeAll(async () => {
  const temp = tempRoot();
  // Packed from a copy holding the dist/ this run built (vitest's global setup runs `npm run
  // build`, which prepack runs too after a clean): a second full compile would cost half a minute.
  const project = join(temp, 'project');
  mkdirSync(project);
  for (const file of ['package.json', 'README.md', 'LICENSE', 'SECURITY.md']) copyFileSync(join(ROOT, file), join(project, file));
  for (const dir of ['dist', 'docs']) cpSync(join(ROOT, dir), join(project, dir), { recursive: true });
  mkdirSync(join(project, 'bench'));
  copyFileSync(join(ROOT, 'bench', 'README.md'), join(project, 'bench', 'README.md'));
  const packDir = join(temp, 'packed');
  mkdirSync(packDir);
  const packed = await inDir(project, 'npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir]);
  const [manifest] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [{ filename: string; files: PackedFile[] }];
  packedFiles = manifest.files.map((file) => file.path);
  const listing = await inDir(packDir, 'tar', ['-tvzf', manifest.filename]);
  packedModes = new Map(
    listing.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/))
      .map((fields) => [fields.at(-1)!.replace(/^package\//, ''), fields[0]!] as const),
  );

  tarball = join(packDir, manifest.filename);
  consumer = join(temp, 'consumer');
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await install(consumer, [tarball]);
  useLocalBuilds(consumer);
  writeFileSync(join(consumer, 'example.test.ts'), readmeExample());
}, 300_000);

/**
 * --ignore-scripts skipped better-sqlite3's native build (minutes from source): this project's
 * binary serves, built for this same Node and the same pinned version. The test runner is the
 * user's own dependency; this project's vitest stands in for it.
 */
function useLocalBuilds(dir: string): void {
  const release = join(dir, 'node_modules', 'better-sqlite3', 'build', 'Release');
  mkdirSync(release, { recursive: true });
  copyFileSync(join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'), join(release, 'better_sqlite3.node'));
  symlinkSync(join(ROOT, 'node_modules', 'vitest'), join(dir, 'node_modules', 'vitest'), 'dir');
}

/**
 * Dependencies come from npm's cache: --offline when it holds everything, else
 * --prefer-offline, which asks the registry only for package metadata the cache lacks.
 */
async function install(dir: string, packages: readonly string[]): Promise<void> {
  const args = ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--omit=dev', ...packages];
  try {
    await inDir(dir, 'npm', ['--offline', ...args]);
  } catch (error) {
    if (!String((error as { stderr?: unknown }).stderr).includes('ENOTCACHED')) throw error;
    await inDir(dir, 'npm', ['--prefer-offline', ...args]);
  }
}

describe('npm pack', () => {
  it('builds afresh before it packs: prepack cleans dist/ and runs the build this test packed', () => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts['prepack']).toBe('npm run clean && npm run build');
    expect(scripts['build']).toBe('node scripts/build.mjs');
  });

  it('ships dist/ with its types, and neither sources, tests nor source maps', () => {
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/testing/index.js', 'dist/testing/index.d.ts', 'dist/testing/test-mcp-stdio-server.js', 'dist/cli/threadline.js']) {
      expect(packedFiles).toContain(file);
    }
    const docs = (file: string) => /^docs\/[^/]+\.md$/.test(file) || file === 'docs/openapi.json';
    expect(packedFiles.filter((file) => !file.startsWith('dist/') && !docs(file) && !['package.json', 'README.md', 'LICENSE', 'SECURITY.md', 'bench/README.md'].includes(file))).toEqual([]);
    expect(packedFiles.filter((file) => file.endsWith('.map'))).toEqual([]);
    expect(packedFiles.filter((file) => file.startsWith('dist/config/write-') || file.endsWith('sync-version.js'))).toEqual([]);
  });

  it('ships every file its README links to', () => {
    const links = relativeLinks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(links.length).toBeGreaterThan(10);
    expect(links.map((link) => posix.normalize(link)).filter((file) => !packedFiles.includes(file))).toEqual([]);
  });

  it('packs the bin executable', () => {
    expect(packedModes.get('dist/cli/threadline.js')).toMatch(/^-rwx/);
  });
});

describe('the installed package', () => {
  it("runs the README's integration-test example through threadline/testing", async () => {
    const { stdout } = await inDir(consumer, join(BIN, 'vitest'), ['run', '--root', consumer, '--reporter', 'verbose']);
    expect(stdout).toMatch(/✓.*answers in the same forum topic/);
  });

  it("type-checks the example against the package's declarations", async () => {
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ['example.test.ts'],
      }),
    );
    await expect(inDir(consumer, join(BIN, 'tsc'), ['-p', 'tsconfig.json'])).resolves.toBeDefined();
  });

  it("type-checks every entry point's declarations with skipLibCheck off, as a strict user's build does", async () => {
    // @types/node, as any Node project has (the install may have brought it already); nothing else of this project's.
    const nodeTypes = join(consumer, 'node_modules', '@types', 'node');
    if (!existsSync(nodeTypes)) {
      mkdirSync(dirname(nodeTypes), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), nodeTypes, 'dir');
    }
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    const entries = Object.keys(manifest.exports).filter((entry) => entry !== './package.json');
    writeFileSync(join(consumer, 'strict.ts'), entries.map((entry, index) => `import * as entry${index} from '${posix.join('threadline', entry)}';\nexport { entry${index} };\n`).join(''));
    writeFileSync(
      join(consumer, 'tsconfig.strict.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
        files: ['strict.ts'],
      }),
    );
    const checked = inDir(consumer, join(BIN, 'tsc'), ['-p', 'tsconfig.strict.json']).catch((error: { stdout?: string }) => {
      throw new Error(`tsc failed:\n${error.stdout ?? String(error)}`);
    });
    await expect(checked).resolves.toBeDefined();
    // Every dependency's declarations are checked too: tens of seconds on two cores.
  }, 240_000);

  it('runs the test MCP server of threadline/testing over stdio and HTTP, from dist/', async () => {
    writeFileSync(
      join(consumer, 'mcp.mjs'),
      `import { startTestGateway, startTestMcpServer } from 'threadline/testing';
const server = await startTestMcpServer();
const gateway = await startTestGateway({ mcpServers: { local: server.stdio, remote: { url: server.url } } });
try {
  for (const name of ['local__routing', 'remote__routing']) {
    const { text } = await gateway.runTool(name, {}, { platform: 'webhook', chatType: 'group', chatId: 'ops', threadId: 'deploys' });
    console.log(name, JSON.parse(text).baggage['chat.thread.id']);
  }
} finally {
  await gateway.stop();
  await server.close();
}
`,
    );
    const { stdout } = await inDir(consumer, process.execPath, ['mcp.mjs']);
    expect(stdout).toContain('local__routing deploys\nremote__routing deploys');
  });

  it('installs the bin executable, runnable by its path', async () => {
    const bin = join(consumer, 'node_modules', 'threadline', 'dist', 'cli', 'threadline.js');
    expect(statSync(bin).mode & 0o111).toBe(0o111);
    expect((await inDir(consumer, bin, ['--version'])).stdout.trim()).toBe(VERSION);
  });

  it('answers npx threadline --version and --help', async () => {
    expect((await inDir(consumer, 'npx', ['--no', '--', 'threadline', '--version'])).stdout.trim()).toBe(VERSION);
    const help = (await inDir(consumer, 'npx', ['--no', '--', 'threadline', '--help'])).stdout;
    for (const command of ['start', 'config', 'doctor', 'deliveries']) expect(help).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });
});

describe('examples/parcel-agent against the packed package', () => {
  it('passes its own tests: its tool and agent through threadline/testing, and `threadline start` loading its module', async () => {
    const example = join(tempRoot(), 'parcel-agent');
    cpSync(join(ROOT, 'examples', 'parcel-agent'), example, { recursive: true });
    const zod = (JSON.parse(readFileSync(join(ROOT, 'node_modules', 'zod', 'package.json'), 'utf8')) as { version: string }).version;
    await install(example, [tarball, `zod@${zod}`]);
    useLocalBuilds(example);
    const { stdout } = await inDir(example, join(BIN, 'vitest'), ['run', '--root', example, '--reporter', 'verbose']).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`the example's tests failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
    });
    expect(stdout).toMatch(/3 passed/);
  }, 240_000);
});
