// `npm test`: the typecheck and the test run side by side, so the typecheck's compile overlaps
// vitest's own build of dist/ (its global setup) instead of coming before it; fails when either does.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
// Not among vitest's exports: its bin, by path.
const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const run = (args) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit' });
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });

const [typecheck, tests] = await Promise.all([
  run([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit']),
  run([vitest, 'run', ...process.argv.slice(2)]),
]);
if (typecheck !== 0) console.error(`npm test: the typecheck failed (exit ${typecheck})`);
process.exit(typecheck !== 0 ? typecheck : tests);
