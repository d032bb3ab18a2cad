import { describe, expect, it, vi } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { VERSION } from '../../src/version.js';

// `start` is checked for what it loads only: these stand in for the real modules.
const imported = vi.hoisted(() => [] as string[]);
vi.mock('../../src/telemetry/register.js', () => {
  imported.push('telemetry/register');
  return {};
});
vi.mock('../../src/cli/main.js', () => {
  imported.push('cli/main');
  return {};
});

async function run(argv: string[]) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env: {} });
  return { code, out, err };
}

describe('threadline', () => {
  it('starts the gateway when given no command, the telemetry bootstrap first', async () => {
    imported.length = 0;
    expect((await run([])).code).toBe(0);
    expect(imported).toEqual(['telemetry/register', 'cli/main']);
  });

  it('prints the version of src/version.ts with --version', async () => {
    expect(await run(['--version'])).toEqual({ code: 0, out: `${VERSION}\n`, err: '' });
  });

  it('lists its commands with --help', async () => {
    const { code, out } = await run(['--help']);
    expect(code).toBe(0);
    for (const command of ['start', 'config', 'doctor', 'deliveries']) expect(out).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });

  it('exits 2 for an unknown command or option, and starts nothing', async () => {
    imported.length = 0;
    for (const argv of [['strat'], ['--verbose'], ['config', '--yaml']]) {
      const { code, err } = await run(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toMatch(/error: (unknown|too many)/);
    }
    expect(imported).toEqual([]);
  });
});
