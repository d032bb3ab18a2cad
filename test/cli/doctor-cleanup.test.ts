import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * What `threadline doctor` removes after probing a data dir it had to create: only the
 * directories it created, and only while empty. A file written beside its probe stands for a
 * gateway starting on the same data dir at that moment.
 */
const beside = vi.hoisted(() => ({ name: undefined as string | undefined }));
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const writeFileSync: typeof real.writeFileSync = (file, ...rest) => {
    real.writeFileSync(file, ...rest);
    if (beside.name !== undefined && typeof file === 'string' && basename(file).startsWith('.threadline-doctor-')) {
      real.writeFileSync(join(file, '..', beside.name), 'written by a gateway starting meanwhile');
    }
  };
  return { ...real, default: { ...real, writeFileSync }, writeFileSync };
});

const tempRoot = useTempDir('doctor-cleanup');
afterEach(() => {
  beside.name = undefined;
});

async function doctor(env: NodeJS.ProcessEnv): Promise<number> {
  return runThreadline(['doctor'], { out: () => {}, err: () => {}, env: { OTEL_TRACES_EXPORTER: 'none', ...env } });
}

describe('threadline doctor on a data dir that does not exist', () => {
  it('removes every directory it created, leaf first, and nothing above them', async () => {
    const base = mkdtempSync(join(tempRoot(), 'base-'));
    expect(await doctor({ THREADLINE_DATA_DIR: join(base, 'a', 'b', 'c') })).toBe(0);
    expect(existsSync(join(base, 'a'))).toBe(false);
    expect(existsSync(base)).toBe(true);
  });

  it('leaves what appeared in them meanwhile, removing only its own probe', async () => {
    const base = mkdtempSync(join(tempRoot(), 'base-'));
    const dir = join(base, 'a', 'data');
    beside.name = 'written-meanwhile';
    await doctor({ THREADLINE_DATA_DIR: dir });
    expect(readdirSync(dir)).toContain('written-meanwhile');
    expect(readdirSync(dir).filter((name) => name.startsWith('.threadline-doctor-'))).toEqual([]);
  });
});
