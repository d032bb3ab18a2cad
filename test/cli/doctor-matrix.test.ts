import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { FakeMatrix } from '../../src/testing/fake-matrix.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('doctor-matrix');
const fakes: FakeMatrix[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function doctor(env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const io = {
    out: (text: string) => void (out += text),
    err: (text: string) => void (err += text),
    env: { THREADLINE_DATA_DIR: mkdtempSync(join(tempRoot(), 'data-')), OTEL_TRACES_EXPORTER: 'none', ...env },
  };
  const code = await runThreadline(['doctor'], io);
  return { code, out, err, matrix: out.trimEnd().split('\n').filter((line) => /^. matrix[ :]/.test(line)) };
}

async function fakeMatrix(): Promise<FakeMatrix> {
  const fake = await FakeMatrix.start({ accessToken: 'syt_doctor_secret_token' });
  fakes.push(fake);
  return fake;
}

describe('threadline doctor with Matrix', () => {
  it('checks nothing of Matrix when it is unset', async () => {
    expect((await doctor({})).matrix).toEqual([]);
  });

  it('says whose the access token is and how many rooms it is in; warns when none', async () => {
    const fake = await fakeMatrix();
    const env = { THREADLINE_MATRIX_HOMESERVER_URL: fake.homeserverUrl, THREADLINE_MATRIX_ACCESS_TOKEN: fake.accessToken };
    const lonely = await doctor(env);
    expect(lonely.code).toBe(0);
    expect(lonely.matrix).toEqual([
      `✓ matrix ${fake.homeserverUrl}: the access token is @threadline:fake.local's`,
      '! matrix: @threadline:fake.local is in no room: invite it, and join as it (docs/platforms.md), so it answers there',
    ]);
    fake.postMessage('!a:fake.local', 'hello');
    fake.postMessage('!b:fake.local', 'hello');
    expect((await doctor(env)).matrix[1]).toBe('✓ matrix: @threadline:fake.local is in 2 rooms');
  });

  it('fails on a token the homeserver refuses, naming the error and never the token', async () => {
    const fake = await fakeMatrix();
    const run = await doctor({ THREADLINE_MATRIX_HOMESERVER_URL: fake.homeserverUrl, THREADLINE_MATRIX_ACCESS_TOKEN: 'syt_wrong_secret_token' });
    expect(run.code).toBe(1);
    expect(run.matrix).toEqual([`✗ matrix ${fake.homeserverUrl}: the access token does not answer: Matrix refused whoami: 401 M_UNKNOWN_TOKEN`]);
    expect(run.out + run.err).not.toContain('secret_token');
  });

  it('fails on settings it cannot use, without asking anything', async () => {
    const run = await doctor({ THREADLINE_MATRIX_ACCESS_TOKEN: 'syt_alone' });
    expect(run.code).toBe(1);
    expect(run.matrix).toEqual(['✗ matrix not checked: the Matrix settings are invalid']);
  });
});
