import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKEND_FILE, readBackend, recordBackend } from '../../src/store/data-dir-backend.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-backend-'));
  dirs.push(dir);
  return dir;
}

describe('the backend a data dir records', () => {
  it('is what the last gateway recorded', () => {
    const dir = dataDir();
    recordBackend(dir, 'redis');
    expect(readBackend(dir)).toBe('redis');
    recordBackend(dir, 'sqlite');
    expect(readBackend(dir)).toBe('sqlite');
  });

  it('is unknown where none was recorded, or the file holds something else', () => {
    const dir = dataDir();
    expect(readBackend(dir)).toBeUndefined();
    writeFileSync(join(dir, BACKEND_FILE), 'mongodb\n');
    expect(readBackend(dir)).toBeUndefined();
  });
});
