/**
 * package.json's `version` lifecycle script: after `npm version` bumps package.json, this
 * writes the same version into src/version.ts, which npm then commits with it. Not shipped.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const VERSION_LINE = /^export const VERSION = '[^']*';$/m;

/** `source` (src/version.ts) with VERSION set to `version`. */
function withVersion(source: string, version: string): string {
  if (!VERSION_LINE.test(source)) throw new Error("src/version.ts has no line export const VERSION = '…';");
  if (!/^[0-9A-Za-z.+-]+$/.test(version)) throw new Error(`not a version: ${version}`);
  return source.replace(VERSION_LINE, `export const VERSION = '${version}';`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = new URL('../../', import.meta.url);
  const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string };
  const file = new URL('src/version.ts', root);
  writeFileSync(file, withVersion(readFileSync(file, 'utf8'), version));
  process.stdout.write(`src/version.ts: ${version}\n`);
}
