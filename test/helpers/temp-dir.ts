import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A fresh directory under the OS temp dir for the calling test file, removed after it, within
 * `removeTimeoutMs` (a directory holding installed packages takes long on a busy machine).
 */
export function useTempDir(prefix: string, removeTimeoutMs?: number): () => string {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }, removeTimeoutMs);
  return () => (dir ??= mkdtempSync(join(tmpdir(), `threadline-${prefix}-`)));
}
