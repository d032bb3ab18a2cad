import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { FakeLiveness } from './fake-liveness.js';
import { MemoryProcessTable } from './memory-process-table.js';
import { RecordingDeliverer } from './recording-deliverer.js';
import { ORIGIN_SESSION, startedId, terminalHarness, useDataDirs, type TerminalHarness } from './terminal-fixture.js';

const tracing = useGlobalTracing();
const dataDir = useDataDirs();

const WAIT_FOR_RELEASE = 'while [ ! -e release ]; do sleep 0.05; done; echo released';

/** Instance `name` of a test's gateways: one process table, one deliverer, one view of the heartbeats. */
function instance(name: string, shared: { table: MemoryProcessTable; deliverer: RecordingDeliverer; liveness: FakeLiveness; dir?: string }): TerminalHarness {
  return terminalHarness({ dataDir: shared.dir ?? dataDir(), table: shared.table, deliverer: shared.deliverer, instance: name, instances: shared.liveness });
}

/** Instance a starts a command and dies: its watchers stop without reporting, the command runs on. Ends it after the test. */
async function startThenDie(a: TerminalHarness, dir: string, args: Record<string, unknown> = {}): Promise<string> {
  await a.terminal.watchers.start();
  const id = startedId(await a.call('terminal', { command: WAIT_FOR_RELEASE, background: true, notify_on_complete: true, ...args }));
  await a.terminal.watchers.stop();
  writeFileSync(join(dir, 'release'), '');
  return id;
}

/** `promise`, or a failure naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function shared(): { table: MemoryProcessTable; deliverer: RecordingDeliverer; liveness: FakeLiveness } {
  return { table: new MemoryProcessTable(), deliverer: new RecordingDeliverer(), liveness: new FakeLiveness() };
}

describe('a background command lost with its instance', () => {
  it("is reported once to its origin chat and thread by another instance's sweep, in a new trace linked to its start; its record goes", async () => {
    const world = { ...shared(), liveness: new FakeLiveness(20) };
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA);
    world.liveness.die('a');

    const b = instance('b', world);
    await b.terminal.watchers.start();
    const notice = await within(world.deliverer.waitFor(`proc:${id}:done`), 5_000, "b's sweep reporting a's command");
    await b.terminal.watchers.stop();

    expect(notice.request.text).toMatch(new RegExp(`^Process ${id} was lost with its instance a, .* after it started; its final status is unknown\\n\\$ while`));
    expect(notice.request.kind).toBe('notification');
    expect(notice.session).toMatchObject({ platform: 'telegram', chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId, userId: 'u-1' });
    expect(world.deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(await world.table.get(id)).toBeUndefined();
    const toolSpan = tracing.span('execute_tool terminal');
    const notify = tracing.span('terminal.notify');
    expect(notice.traceId).toBe(notify.spanContext().traceId);
    expect(notify.spanContext().traceId).not.toBe(toolSpan.spanContext().traceId);
    expect(notify.links.map((link) => link.context.spanId)).toEqual([toolSpan.spanContext().spanId]);
  });

  it("a live instance's command is never reported, nor one while this instance's own heartbeat is not steady", async () => {
    const world = shared();
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA);
    const b = instance('b', world);
    await b.terminal.watchers.start();
    await b.terminal.watchers.lostInstances!.sweep();
    expect(world.liveness.asked).toEqual(['a']);

    world.liveness.die('a');
    world.liveness.steady = false;
    await b.terminal.watchers.lostInstances!.sweep();
    await b.terminal.watchers.stop();
    expect(world.deliverer.ids()).toEqual([]);
    expect((await world.table.get(id))?.exit).toBeUndefined();
  });

  it('never reports its own commands, whatever its heartbeat says', async () => {
    const world = shared();
    const dirA = dataDir();
    const a = instance('a', { ...world, dir: dirA });
    await a.terminal.watchers.start();
    const id = startedId(await a.call('terminal', { command: WAIT_FOR_RELEASE, background: true, notify_on_complete: true }));
    world.liveness.die('a');
    await a.terminal.watchers.lostInstances!.sweep();
    expect(world.liveness.asked).toEqual([]);
    expect(world.deliverer.ids()).toEqual([]);
    writeFileSync(join(dirA, 'release'), '');
    expect((await world.deliverer.waitFor(`proc:${id}:done`)).request.text).toContain('released');
    await a.terminal.watchers.stop();
  });

  it('two instances sweeping at once report it once', async () => {
    const world = shared();
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA);
    world.liveness.die('a');
    const [b, c] = [instance('b', world), instance('c', world)];
    await Promise.all([b.terminal.watchers.start(), c.terminal.watchers.start()]);
    await Promise.all([b.terminal.watchers.lostInstances!.sweep(), c.terminal.watchers.lostInstances!.sweep()]);
    await Promise.all([b.terminal.watchers.stop(), c.terminal.watchers.stop()]);
    expect(world.deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(await world.table.get(id)).toBeUndefined();
  });

  it('a report that failed for now is made again once its claim expires, under the same notice id', async () => {
    const world = shared();
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA);
    world.liveness.die('a');
    const b = instance('b', world);
    await b.terminal.watchers.start();
    world.deliverer.failWith = new Error('the outbox is away');
    await b.terminal.watchers.lostInstances!.sweep();
    expect(world.deliverer.ids()).toEqual([]);
    expect((await world.table.get(id))?.exit?.note).toBe('lost with its instance a');

    world.deliverer.failWith = undefined;
    world.liveness.expireClaims();
    await b.terminal.watchers.lostInstances!.sweep();
    await b.terminal.watchers.stop();
    expect(world.deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(world.deliverer.deliveries[0]!.request.text).toContain('was lost with its instance a, ');
    expect(await world.table.get(id)).toBeUndefined();
  });

  it('says how it ended when the lost instance recorded its end but not its report', async () => {
    const world = shared();
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA);
    const record = (await world.table.get(id))!;
    await world.table.ended(id, { code: 3, endedAt: record.startedAt + 4_000 });
    world.liveness.die('a');
    const b = instance('b', world);
    await b.terminal.watchers.start();
    await b.terminal.watchers.lostInstances!.sweep();
    await b.terminal.watchers.stop();
    expect(world.deliverer.ids()).toEqual([`proc:${id}:done`]);
    expect(world.deliverer.deliveries[0]!.request.text).toMatch(
      new RegExp(`^Process ${id} finished \\(exit 3\\) after 4\\.0s, but its instance a was lost before reporting it; its output is not available\\n`),
    );
  });

  it('a lost command that asked for no notice is removed without a message', async () => {
    const world = shared();
    const dirA = dataDir();
    const id = await startThenDie(instance('a', { ...world, dir: dirA }), dirA, { notify_on_complete: false });
    world.liveness.die('a');
    const b = instance('b', world);
    await b.terminal.watchers.start();
    await b.terminal.watchers.lostInstances!.sweep();
    await b.terminal.watchers.stop();
    expect(world.deliverer.ids()).toEqual([]);
    expect(await world.table.get(id)).toBeUndefined();
  });
});
