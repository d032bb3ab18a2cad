// Vitest's global setup: dist/ brought up to date once per run (npm run build, incremental: a
// second or two when nothing changed), as every test that starts the gateway process runs it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export default function buildDist(): void {
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed (${build.status ?? build.signal}):\n${build.stdout}${build.stderr}`);
}
