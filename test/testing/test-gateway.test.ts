import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { startTestGateway } from '../../src/testing/index.js';

const tmpdirBefore = process.env['TMPDIR'];
let privateTmp: string | undefined;

afterEach(() => {
  if (tmpdirBefore === undefined) delete process.env['TMPDIR'];
  else process.env['TMPDIR'] = tmpdirBefore;
  if (privateTmp !== undefined) rmSync(privateTmp, { recursive: true, force: true });
  privateTmp = undefined;
});

describe('startTestGateway', () => {
  it('leaves no data dir behind when the gateway it starts is refused', async () => {
    privateTmp = mkdtempSync(join(tmpdir(), 'threadline-test-tmp-'));
    // os.tmpdir() reads TMPDIR at each call: the gateway's data dir is made in this folder of our own.
    process.env['TMPDIR'] = privateTmp;
    await expect(startTestGateway({ env: { THREADLINE_CONCURRENCY: 'many' } })).rejects.toBeInstanceOf(ConfigError);
    expect(readdirSync(privateTmp)).toEqual([]);
  });
});
