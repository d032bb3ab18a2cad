import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh directory under the OS temp dir for the calling test file, removed after it. */
export function useTempDir(prefix: string): () => string {
  let dir: string | undefined;
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return () => (dir ??= mkdtempSync(join(tmpdir(), `threadline-${prefix}-`)));
}
