import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { RecordingDeliverer } from './recording-deliverer.js';
import { MemoryProcessTable } from './memory-process-table.js';
import { startedId, terminalHarness, useDataDirs } from './terminal-fixture.js';

useGlobalTracing();
const dataDir = useDataDirs();

const WAIT_FOR_RELEASE = 'while [ ! -e release ]; do sleep 0.05; done; echo released';

// Instances share one process table (Redis) but not hosts: a pid is only meaningful where it was started.
describe('background commands of several gateway instances', () => {
  it('another instance neither adopts, reports nor kills a command; its own instance reports it', async () => {
    const table = new MemoryProcessTable();
    const deliverer = new RecordingDeliverer();
    const [dirA, dirB] = [dataDir(), dataDir()];
    const a = terminalHarness({ dataDir: dirA, table, deliverer, instance: 'a' });
    await a.terminal.watchers.start();
    const id = startedId(await a.call('terminal', { command: WAIT_FOR_RELEASE, background: true, notify_on_complete: true }));
    expect((await table.get(id))?.instance).toBe('a');

    const b = terminalHarness({ dataDir: dirB, table, deliverer, instance: 'b' });
    await b.terminal.watchers.start();
    await expect(b.call('kill_process', { id })).rejects.toThrow(/runs on gateway instance a/);
    await b.terminal.watchers.stop();
    // stop() waits for every report b started: none, and the record is still a's.
    expect(deliverer.ids()).toEqual([]);
    expect(await table.get(id)).toBeDefined();

    writeFileSync(join(dirA, 'release'), '');
    const done = await deliverer.waitFor(`proc:${id}:done`);
    expect(done.request.text).toContain('released');
    await a.terminal.watchers.stop();
    expect(existsSync(join(dirA, 'processes', id))).toBe(false);
  });
});
