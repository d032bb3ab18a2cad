import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import type { RoutingSnapshot } from '../../src/session/index.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('cli-schedules');

function origin(chatId: string, userId: string): RoutingSnapshot {
  return { v: 1, session: { platform: 'slack', chatType: 'group', chatId, userId, sessionId: 'tl_x' } };
}

/** Jobs of two users in three chats. */
async function seed(): Promise<string> {
  const dataDir = mkdtempSync(join(tempRoot(), 'data-'));
  const store = await SqliteStore.open(join(dataDir, 'threadline.db'));
  const add = (id: string, chatId: string, userId: string, nextAt: number) =>
    store.schedules.add(
      { id, origin: origin(chatId, userId), destination: { platform: 'slack', chatId, threadId: `${id}.1` }, target: 'origin', text: `text of ${id}`, nextAt, createdAt: 1 },
      { maxPerDestination: 100, maxTotal: 100 },
    );
  await add('c00001', 'C1', 'U1', 3_000);
  await add('c00002', 'C2', 'U1', 1_000);
  await add('c00003', 'C3', 'U2', 2_000);
  await store.close();
  return dataDir;
}

async function run(argv: string[]) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env: {} });
  return { code, out, err };
}

describe('threadline schedules', () => {
  it('lists every chat\'s jobs, soonest first, filtered by chat or user', async () => {
    const dataDir = await seed();
    const all = await run(['schedules', 'list', '--data-dir', dataDir]);
    expect(all.code).toBe(0);
    expect([...all.out.matchAll(/^(c\d{5}) /gm)].map((m) => m[1])).toEqual(['c00002', 'c00003', 'c00001']);
    expect(all.out).toMatch(/3 jobs, soonest first\n$/);
    const ofUser = JSON.parse((await run(['schedules', 'list', '--json', '--user', 'U1', '--data-dir', dataDir])).out) as { id: string; userId: string }[];
    expect(ofUser.map((job) => job.id)).toEqual(['c00002', 'c00001']);
    const inChat = JSON.parse((await run(['schedules', 'list', '--json', '--chat', 'C3', '--data-dir', dataDir])).out) as { id: string }[];
    expect(inChat.map((job) => job.id)).toEqual(['c00003']);
  });

  it('removes a job of any chat by id, and fails with exit 1 for an unknown one', async () => {
    const dataDir = await seed();
    const removed = await run(['schedules', 'rm', 'c00003', '--data-dir', dataDir]);
    expect(removed).toMatchObject({ code: 0, out: 'removed c00003; it does not run again\n' });
    const again = await run(['schedules', 'rm', 'c00003', '--data-dir', dataDir]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/no job c00003/);
    expect((await run(['schedules', 'list', '--data-dir', dataDir])).out).not.toContain('c00003');
  });
});
