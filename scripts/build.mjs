// `npm run build`: compiles src/ into dist/ incrementally (tsc's build info in dist/), so a build
// with nothing changed costs a second or two instead of a full compile.
// tsc alone would leave the output of a removed or renamed source in dist/, where it could still
// be imported, and would skip a deleted output its build info still counts as written: both
// are put right here before tsc runs.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ts = require('typescript');

const CONFIG = 'tsconfig.build.json';
const BIN = 'cli/threadline.js';
const root = fileURLToPath(new URL('..', import.meta.url));

const parsed = ts.getParsedCommandLineOfConfigFile(join(root, CONFIG), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => fail(diagnostic) });
if (parsed === undefined) process.exit(1);
const { outDir, rootDir } = parsed.options;
const buildInfo = ts.getTsBuildInfoEmitOutputFilePath(parsed.options);

/** Each output tsc writes for a source, as paths relative to outDir without the extension. */
const expected = new Set(parsed.fileNames.map((file) => relative(rootDir, file).replace(/\.ts$/, '')));

let outputMissing = false;
for (const stem of expected) if (!existsSync(join(outDir, `${stem}.js`))) outputMissing = true;
pruneStale(outDir);
// Build info that counts an output which is gone would have tsc skip it: start afresh instead.
if (outputMissing && buildInfo !== undefined) rmSync(buildInfo, { force: true });

const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '--build', CONFIG], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// tsc writes files without the exec bit; the package's bin needs it (npm pack keeps modes).
chmodSync(join(outDir, BIN), 0o755);

/** Removes from `dir` each output whose source is no longer built, then any folder left empty. */
function pruneStale(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      pruneStale(path);
      if (readdirSync(path).length === 0) rmdirSync(path);
    } else if (path !== buildInfo && !expected.has(relative(outDir, path).replace(/(\.d\.ts|\.js)(\.map)?$/, ''))) {
      rmSync(path);
    }
  }
}

function fail(diagnostic) {
  console.error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  process.exit(1);
}
