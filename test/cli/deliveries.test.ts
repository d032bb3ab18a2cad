import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { VERSION } from '../../src/version.js';
import { webhookOrigin } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

// `start` is checked for its import order only: these stand in for the real modules.
const imported = vi.hoisted(() => [] as string[]);
vi.mock('../../src/telemetry/register.js', () => {
  imported.push('telemetry/register');
  return {};
});
vi.mock('../../src/cli/main.js', () => {
  imported.push('cli/main');
  return {};
});

const tempRoot = useTempDir('cli');
const LONG_TEXT = `red \u001b[31m\nbold\u202e${'x'.repeat(250)}`;

/** A data dir whose store holds: a, a:b and b failed; a second one of a in flight; c done. */
async function seed(): Promise<string> {
  const dataDir = mkdtempSync(join(tempRoot(), 'data-'));
  const store = await SqliteStore.open(join(dataDir, 'threadline.db'));
  const lease = Date.now() + 60_000;
  const add = (id: string, chatId: string, text = `reply ${id}`) =>
    store.outbox.add(
      { id, kind: 'reply', destination: { platform: 'webhook', chatId }, text, origin: webhookOrigin(chatId, 'tl_x'), createdAt: Date.now() },
      lease,
    );
  await add('d-a1', 'a');
  await store.outbox.markFailed('d-a1', 'receiver answered 500', lease);
  await add('d-ab', 'a:b');
  await store.outbox.markFailed('d-ab', 'receiver answered 500', lease);
  await add('d-b', 'b', LONG_TEXT);
  await store.outbox.markFailed('d-b', `receiver answered 502:\r\n${'e'.repeat(300)}`, lease);
  await add('d-a2', 'a');
  await add('d-c', 'c');
  await store.outbox.markDone('d-c', lease);
  await store.close();
  return dataDir;
}

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

async function listJson(dataDir: string, ...args: string[]): Promise<Array<Record<string, unknown>>> {
  const { code, out } = await run(['deliveries', 'list', '--json', '--data-dir', dataDir, ...args]);
  expect(code).toBe(0);
  return JSON.parse(out) as Array<Record<string, unknown>>;
}

const ids = (rows: Array<Record<string, unknown>>) => rows.map((row) => row.id);

function keysOf(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
}

describe('threadline deliveries list', () => {
  it('shows every delivery as text, newest first, with a count', async () => {
    const dataDir = await seed();
    const { code, out } = await run(['deliveries', 'list', '--data-dir', dataDir]);
    expect(code).toBe(0);
    const headers = out.split('\n').filter((line) => line.startsWith('d-'));
    expect(headers.map((line) => line.split(/\s+/)[0])).toEqual(['d-c', 'd-a2', 'd-b', 'd-ab', 'd-a1']);
    expect(headers[3]).toMatch(/^d-ab\s+failed\s+reply\s+webhook:a%3Ab\s+attempts 1$/);
    expect(out).toMatch(/created \d{4}-\d\d-\d\dT[\d:.]+Z {2}finished \d{4}-/);
    expect(out).toContain('  error: receiver answered 500\n');
    expect(out.trimEnd().split('\n').at(-1)).toBe('5 deliveries, newest first');
  });

  it('cuts text and errors at 200 characters, on one line, with no raw control characters', async () => {
    const { out } = await run(['deliveries', 'list', '--failed', '--chat', 'b', '--data-dir', await seed()]);
    expect(out).toContain(`  text:  red \\u001b[31m\\nbold\\u202e${'x'.repeat(185)}…\n`);
    expect(out).toContain(`  error: receiver answered 502:\\r\\n${'e'.repeat(200 - 'receiver answered 502:\r\n'.length)}…\n`);
    expect(out).not.toContain('\u001b');
  });

  it('with --failed shows only failed deliveries', async () => {
    const rows = await listJson(await seed(), '--failed');
    expect(ids(rows).sort()).toEqual(['d-a1', 'd-ab', 'd-b']);
    expect(rows.every((row) => row.status === 'failed')).toBe(true);
  });

  it('with --chat matches the chat id exactly, not a prefix of it nor a part holding ":"', async () => {
    const dataDir = await seed();
    expect(ids(await listJson(dataDir, '--chat', 'a'))).toEqual(['d-a2', 'd-a1']);
    expect(ids(await listJson(dataDir, '--chat', 'a:b'))).toEqual(['d-ab']);
    expect(ids(await listJson(dataDir, '--chat', 'b'))).toEqual(['d-b']);
    expect(ids(await listJson(dataDir, '--chat', 'a', '--failed'))).toEqual(['d-a1']);
  });

  it('with --json prints the records without their origin routing', async () => {
    const dataDir = await seed();
    const { out } = await run(['deliveries', 'list', '--json', '--data-dir', dataDir]);
    expect(out).not.toMatch(/[\u001b\u202e]/);
    const rows = await listJson(dataDir, '--limit', '10');
    expect(rows).toHaveLength(5);
    const ab = rows.find((row) => row.id === 'd-ab');
    expect(ab).toMatchObject({
      status: 'failed',
      kind: 'reply',
      destination: { platform: 'webhook', chatId: 'a:b' },
      target: 'webhook:a%3Ab',
      text: 'reply d-ab',
      attempts: 1,
      lastError: 'receiver answered 500',
    });
    expect(ab?.['finishedAt']).toMatch(/^\d{4}-\d\d-\d\dT/);
    const keys = keysOf(rows);
    expect(keys).not.toContain('session');
    expect(keys).not.toContain('origin');
    expect(JSON.stringify(rows)).not.toContain('tl_x');
    const b = rows.find((row) => row.id === 'd-b');
    expect(b).toMatchObject({ text: LONG_TEXT.slice(0, 200), textTruncated: true });
  });

  it('takes --limit as a whole number from 1 to 10000', async () => {
    const dataDir = await seed();
    expect(ids(await listJson(dataDir, '--limit', '2'))).toEqual(['d-c', 'd-a2']);
    const { out } = await run(['deliveries', 'list', '--limit', '2', '--data-dir', dataDir]);
    expect(out).toContain('2 deliveries, newest first (limit 2 reached; pass --limit for more)');
    for (const bad of ['0', '10001', '2.5', 'ten', '-1']) {
      const result = await run(['deliveries', 'list', '--limit', bad, '--data-dir', dataDir]);
      expect(result.code, bad).toBe(2);
      expect(result.err).toContain('--limit');
    }
  });

  it('finds the store through THREADLINE_DATA_DIR when --data-dir is not given', async () => {
    const dataDir = await seed();
    const { code, out } = await run(['deliveries', 'list', '--failed', '--json'], { THREADLINE_DATA_DIR: dataDir });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toHaveLength(3);
  });

  it('exits 1 naming the path when there is no store, and creates none', async () => {
    const dataDir = join(tempRoot(), 'nothing-here');
    const { code, out, err } = await run(['deliveries', 'list'], { THREADLINE_DATA_DIR: dataDir });
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toContain(join(dataDir, 'threadline.db'));
    expect(err).toContain('--data-dir');
    expect(err).toContain('THREADLINE_DATA_DIR');
    expect(err).toContain('[TL_STORE_FAILED]');
    expect(existsSync(dataDir)).toBe(false);
    expect((await run(['deliveries', 'retry', '--all-failed', '--data-dir', dataDir])).code).toBe(1);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('threadline deliveries retry', () => {
  it('makes one failed delivery pending again', async () => {
    const dataDir = await seed();
    const { code, out } = await run(['deliveries', 'retry', 'd-ab', '--data-dir', dataDir]);
    expect(code).toBe(0);
    expect(out).toBe('queued 1 delivery for retry: d-ab; the running gateway sends it within a second\n');
    const store = await SqliteStore.open(join(dataDir, 'threadline.db'));
    try {
      const [record] = await store.outbox.list({ chatId: 'a:b', limit: 10 });
      expect(record).toMatchObject({ id: 'd-ab', status: 'pending', attempts: 0 });
      expect((await store.outbox.list({ failedOnly: true, limit: 10 })).map((r) => r.id).sort()).toEqual(['d-a1', 'd-b']);
    } finally {
      await store.close();
    }
  });

  it('with --all-failed queues every failed delivery and says how many', async () => {
    const dataDir = await seed();
    const first = await run(['deliveries', 'retry', '--all-failed', '--data-dir', dataDir]);
    expect(first).toMatchObject({ code: 0, out: 'queued 3 deliveries for retry; the running gateway sends them within a second\n' });
    expect(await listJson(dataDir, '--failed')).toEqual([]);
    const again = await run(['deliveries', 'retry', '--all-failed', '--data-dir', dataDir]);
    expect(again).toMatchObject({ code: 0, out: expect.stringMatching(/^queued 0 deliveries/) });
  });

  it('exits 1 for an id that is not a failed delivery', async () => {
    const dataDir = await seed();
    for (const id of ['no-such-id', 'd-a2', 'd-c']) {
      const { code, out, err } = await run(['deliveries', 'retry', id, '--data-dir', dataDir]);
      expect(code, id).toBe(1);
      expect(out).toBe('');
      expect(err).toContain(`no failed delivery ${id}`);
    }
  });

  it('exits 2 without an id or --all-failed, or with both', async () => {
    const dataDir = await seed();
    for (const argv of [[], ['d-ab', '--all-failed']]) {
      const { code, err } = await run(['deliveries', 'retry', ...argv, '--data-dir', dataDir]);
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toContain('--all-failed');
    }
    expect(await listJson(dataDir, '--failed')).toHaveLength(3);
  });
});

describe('threadline', () => {
  it('exits 2 on bad usage', async () => {
    // No arguments at all is `start` (test/cli/threadline.test.ts).
    for (const argv of [['deliveries'], ['deliveries', 'lst'], ['deliveries', 'list', '--nope'], ['frobnicate'], ['deliveries', 'list', '--chat']]) {
      const { code, err } = await run(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(err).not.toBe('');
    }
  });

  it('answers --help everywhere and --version with exit 0', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    expect(top.out).toContain('deliveries');
    expect(top.out).toContain('start');
    for (const argv of [['deliveries', '--help'], ['deliveries', 'list', '--help'], ['deliveries', 'retry', '--help'], ['help', 'deliveries']]) {
      const { code, out } = await run(argv);
      expect(code, argv.join(' ')).toBe(0);
      expect(out).toContain('Usage: threadline deliveries');
    }
    expect(await run(['--version'])).toMatchObject({ code: 0, out: `${VERSION}\n` });
  });

  it('start loads the telemetry bootstrap before the gateway', async () => {
    expect(await run(['start'])).toMatchObject({ code: 0 });
    expect(imported).toEqual(['telemetry/register', 'cli/main']);
  });

  it('runs as the built bin', () => {
    const result = spawnSync(process.execPath, ['dist/cli/threadline.js', 'deliveries', '--help'], {
      cwd: join(import.meta.dirname, '../..'),
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: threadline deliveries');
  });
});
