import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ProcessRecord, ProcessTable } from '../../../src/store/store.js';
import { describe, expect, it } from 'vitest';
import { signalGroup } from '../../../src/tools/terminal/process-group.js';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { ManualClock } from '../../../src/tools/clock.js';
import { ADOPTED_SWEEP_MS } from '../../../src/tools/terminal/index.js';
import { RecordingDeliverer } from './recording-deliverer.js';
import { ORIGIN_SESSION, startedId, terminalHarness, useDataDirs, useSqliteProcesses } from './terminal-fixture.js';

useGlobalTracing();
const dataDir = useDataDirs();
const sqliteProcesses = useSqliteProcesses();

/** Runs until a file `release` appears in its working directory (the data dir): the test decides when it ends. */
const WAIT_FOR_RELEASE = 'echo waiting; while [ ! -e release ]; do sleep 0.05; done; echo released; exit 5';

/** A gateway's first life: starts the command, then "dies" (its watchers stop; the command keeps running). */
async function firstLife(dir: string, table: ProcessTable, deliverer: RecordingDeliverer): Promise<{ id: string; pid: number }> {
  const first = terminalHarness({ dataDir: dir, table, deliverer });
  await first.terminal.watchers.start();
  const id = startedId(await first.call('terminal', { command: WAIT_FOR_RELEASE, background: true, notify_on_complete: true }));
  await first.terminal.watchers.stop();
  const record = await table.get(id);
  return { id, pid: record!.pid };
}

describe('terminal watchers across a restart', () => {
  it('reports, once, a command that ended while the gateway was down', async () => {
    const dir = dataDir();
    const table = await sqliteProcesses(dir);
    const deliverer = new RecordingDeliverer();
    const { id } = await firstLife(dir, table, deliverer);
    writeFileSync(join(dir, 'release'), '');
    await expect.poll(() => existsSync(join(dir, 'processes', id, 'status')), { timeout: 10_000 }).toBe(true);
    expect(deliverer.ids()).toEqual([]);

    const second = terminalHarness({ dataDir: dir, table, deliverer });
    await second.terminal.watchers.start();
    const done = await deliverer.waitFor(`proc:${id}:done`);
    await second.terminal.watchers.stop();
    expect(done.session).toMatchObject({ chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 5, after `));
    expect(done.request.text).toContain('waiting\nreleased\n');

    const third = terminalHarness({ dataDir: dir, table, deliverer });
    await third.terminal.watchers.start();
    await third.terminal.watchers.stop();
    expect(deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(existsSync(join(dir, 'processes', id))).toBe(false);
  });

  it('adopts a command still running at the start and reports it when it ends', async () => {
    const dir = dataDir();
    const table = await sqliteProcesses(dir);
    const deliverer = new RecordingDeliverer();
    const { id } = await firstLife(dir, table, deliverer);

    const clock = new ManualClock();
    const second = terminalHarness({ dataDir: dir, table, deliverer, clock });
    await second.terminal.watchers.start();
    await clock.advance(ADOPTED_SWEEP_MS);
    expect(deliverer.ids()).toEqual([]);
    expect(await table.get(id)).toBeDefined();

    writeFileSync(join(dir, 'release'), '');
    await expect.poll(() => existsSync(join(dir, 'processes', id, 'status')), { timeout: 10_000 }).toBe(true);
    await clock.advance(ADOPTED_SWEEP_MS);
    const done = await deliverer.waitFor(`proc:${id}:done`);
    await second.terminal.watchers.stop();
    expect(done.request.text).toContain('exit 5');
    expect(done.session).toMatchObject({ chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
    expect(deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(clock.pending).toBe(0);
  });

  it('says the exit status is unknown when the wrapper was killed with SIGKILL while the gateway was down', async () => {
    const dir = dataDir();
    const table = await sqliteProcesses(dir);
    const deliverer = new RecordingDeliverer();
    const { id, pid } = await firstLife(dir, table, deliverer);
    process.kill(-pid, 'SIGKILL');
    await expect.poll(() => signalGroup(pid, 0), { timeout: 10_000 }).toBe(false);

    const second = terminalHarness({ dataDir: dir, table, deliverer });
    await second.terminal.watchers.start();
    const done = await deliverer.waitFor(`proc:${id}:done`);
    await second.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: ended while the gateway was down; exit status unknown`));
    expect(await table.all()).toEqual([]);
  });

  it('removes directories no record names (a crash between spawn and record)', async () => {
    const dir = dataDir();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'processes', 'pzzzzz'), { recursive: true });
    const harness = terminalHarness({ dataDir: dir });
    await harness.terminal.watchers.start();
    await harness.terminal.watchers.stop();
    expect(existsSync(join(dir, 'processes', 'pzzzzz'))).toBe(false);
  });

  it('a command survives the gateway being killed with SIGKILL, and the next start reports its end', async () => {
    const dir = dataDir();
    const gateway = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'first-life.ts'), dir, WAIT_FOR_RELEASE], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(createInterface({ input: gateway.stdout }), 'line')) as [string];
    const [record] = JSON.parse(line) as ProcessRecord[];
    gateway.kill('SIGKILL');
    await once(gateway, 'exit');
    expect(signalGroup(record!.pid, 0)).toBe(true);

    const table = await sqliteProcesses(dir);
    await table.add(record!, { maxPerDestination: 10, maxTotal: 10 });
    const deliverer = new RecordingDeliverer();
    const clock = new ManualClock();
    const second = terminalHarness({ dataDir: dir, table, deliverer, clock });
    await second.terminal.watchers.start();
    writeFileSync(join(dir, 'release'), '');
    await expect.poll(() => existsSync(join(dir, 'processes', record!.id, 'status')), { timeout: 10_000 }).toBe(true);
    await clock.advance(ADOPTED_SWEEP_MS);
    const done = await deliverer.waitFor(`proc:${record!.id}:done`);
    await second.terminal.watchers.stop();
    expect(done.request.text).toContain('exit 5');
    expect(done.request.text).toContain('waiting\nreleased\n');
    expect(done.session).toMatchObject({ chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
  });
});
