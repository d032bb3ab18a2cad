import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { withSession } from '../../../src/session/index.js';
import { ThreadlineError } from '../../../src/errors.js';
import { ManualClock } from '../../../src/tools/clock.js';
import { ADOPTED_SWEEP_MS } from '../../../src/tools/terminal/index.js';
import { fakeSpawner } from './fake-spawner.js';
import { OTHER_SESSION, ORIGIN_SESSION, startedId, terminalHarness, useDataDirs, useSqliteProcesses } from './terminal-fixture.js';

const tracing = useGlobalTracing();
const dataDir = useDataDirs();
const sqliteProcesses = useSqliteProcesses();

describe('terminal, background', () => {
  it('reports the end to the chat and thread that started it, with the output tail, then forgets it', async () => {
    const dir = dataDir();
    const harness = terminalHarness({ dataDir: dir, table: await sqliteProcesses(dir) });
    await harness.terminal.watchers.start();
    const started = await harness.call('terminal', { command: 'echo hello; echo bye >&2; exit 4', background: true, notify_on_complete: true });
    const id = startedId(started);
    expect(started.text).toMatch(new RegExp(`^Started ${id} \\(pid \\d+\\) in the background; its end will be reported here`));

    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    expect(done.request.kind).toBe('notification');
    expect(done.session).toMatchObject({ platform: 'telegram', chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 4, after `));
    expect(done.request.text).toContain('$ echo hello; echo bye >&2; exit 4');
    expect(done.request.text).toContain('hello\nbye\n');
    await harness.terminal.watchers.stop();
    expect(await harness.table.all()).toEqual([]);
    expect(existsSync(join(dir, 'processes', id))).toBe(false);
  });

  it('runs and reports the command with a relative data directory (the default is ./data)', async () => {
    // Nested, so the path does not happen to mean the same from inside the data directory.
    const dir = relative(process.cwd(), join(dataDir(), 'nested', 'data'));
    const harness = terminalHarness({ dataDir: dir });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: 'echo hello; exit 4', background: true, notify_on_complete: true }));
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 4, after `));
    expect(done.request.text).toContain('hello\n');
  });

  it('delivers in a new trace whose root links to the execute_tool span that started it', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: 'true', background: true, notify_on_complete: true }));
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    const toolSpan = tracing.span('execute_tool terminal');
    const notify = tracing.span('terminal.notify');
    expect(done.traceId).toBe(notify.spanContext().traceId);
    expect(notify.spanContext().traceId).not.toBe(toolSpan.spanContext().traceId);
    expect(notify.links.map((link) => link.context.spanId)).toEqual([toolSpan.spanContext().spanId]);
  });

  it('cuts the captured output at the cap with a marker, and the command goes on past it to its own exit status', async () => {
    const harness = terminalHarness({ dataDir: dataDir(), config: { outputMaxBytes: 64 * 1024 } });
    await harness.terminal.watchers.start();
    const id = startedId(
      await harness.call('terminal', { command: 'head -c 200000 /dev/zero; echo more; exit 7', background: true, notify_on_complete: true }),
    );
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    // 7, not head's 0 nor a SIGPIPE's 141: writing past the cap never fails.
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 7, after `));
    expect(done.request.text).toContain('output cut at 65536 bytes');
    expect(done.request.text).toMatch(/\[threadline: output cut at 65536 bytes; 134469 more bytes discarded\]\n$/);
  });

  it('caps only the captured output: a file the command writes past the cap is whole', async () => {
    const dir = dataDir();
    const harness = terminalHarness({ dataDir: dir, config: { outputMaxBytes: 64 * 1024 } });
    await harness.terminal.watchers.start();
    const file = join(dir, 'big.bin');
    const id = startedId(
      await harness.call('terminal', {
        command: `head -c 1000000 /dev/zero >'${file}' && echo wrote; head -c 100000 /dev/zero | tr '\\0' x`,
        background: true,
        notify_on_complete: true,
      }),
    );
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(statSync(file).size).toBe(1_000_000);
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 0, after `));
    expect(done.request.text).toContain('output cut at 65536 bytes');
    // What was kept is the start of the output: the marker follows the first 65536 bytes.
    expect(done.request.text).toMatch(/x{100}\n\[threadline: output cut at 65536 bytes; 34470 more bytes discarded\]\n$/);
  });

  it('counts a command as running while a process it left in the background holds its output, and keeps what that process writes', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: '(sleep 0.3; echo late) & echo early; exit 5', background: true, notify_on_complete: true }));
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 5, after `));
    expect(done.request.text).toMatch(/early\nlate\n$/);
  });

  it('adds no marker when the output fits', async () => {
    const harness = terminalHarness({ dataDir: dataDir(), config: { outputMaxBytes: 64 * 1024 } });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: 'head -c 65536 /dev/zero | tr "\\0" y', background: true, notify_on_complete: true }));
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} finished: exit 0, after `));
    expect(done.request.text).not.toContain('cut at');
    expect(done.request.text).toMatch(/y{100}$/);
  });

  it('delivers from the origin routing even when another session is active as the process exits', async () => {
    const dir = dataDir();
    const { spawner, children } = fakeSpawner();
    const harness = terminalHarness({ dataDir: dir, spawner });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: 'make', background: true, notify_on_complete: true }));
    const child = children[0]!;
    expect(child.stdin.said).toEqual(['run']);
    writeFileSync(join(child.dir, 'status'), '0\n');
    withSession(OTHER_SESSION, () => child.emit('exit', 0, null));

    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.session).toMatchObject({ platform: 'telegram', chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
    expect(done.request.origin.session).toMatchObject({ chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
  });

  it('retries a report that failed for now, and drops one whose destination is refused', async () => {
    const clock = new ManualClock(1_000_000);
    const { spawner, children } = fakeSpawner();
    const dir = dataDir();
    const harness = terminalHarness({ dataDir: dir, spawner, clock, table: await sqliteProcesses(dir) });
    await harness.terminal.watchers.start();
    const later = startedId(await harness.call('terminal', { command: 'make', background: true, notify_on_complete: true }));
    const never = startedId(await harness.call('terminal', { command: 'make', background: true, notify_on_complete: true }));
    const attempts = vi.spyOn(harness.deliverer, 'deliver');
    const end = async (index: number): Promise<void> => {
      const before = attempts.mock.calls.length;
      writeFileSync(join(children[index]!.dir, 'status'), '0\n');
      children[index]!.emit('exit', 0, null);
      await expect.poll(() => attempts.mock.calls.length).toBe(before + 1);
    };

    harness.deliverer.failWith = new ThreadlineError('TL_OUTBOX_FULL', 'the outbox is full');
    await end(0);
    harness.deliverer.failWith = undefined;
    await clock.advance(ADOPTED_SWEEP_MS);
    await harness.deliverer.waitFor(`proc:${later}:done`);

    harness.deliverer.failWith = new ThreadlineError('TL_TARGET_INVALID', 'No platform "telegram" is enabled in this gateway');
    await end(1);
    // Dropped at once: no record holding a cap slot, no retry every second.
    await expect.poll(() => harness.table.get(never)).toBeUndefined();
    expect(existsSync(join(dir, 'processes', never))).toBe(false);
    expect(harness.terminal.watchers.size).toBe(0);
    await clock.advance(10 * ADOPTED_SWEEP_MS);
    expect(attempts).toHaveBeenCalledTimes(3);
    await harness.terminal.watchers.stop();
    expect(clock.pending).toBe(0);
  });

  it('sends one progress update per interval, numbered, until the command ends', async () => {
    const clock = new ManualClock(1_000_000);
    const { spawner, children } = fakeSpawner();
    const dir = dataDir();
    const harness = terminalHarness({ dataDir: dir, spawner, clock, table: await sqliteProcesses(dir) });
    await harness.terminal.watchers.start();
    const id = startedId(await harness.call('terminal', { command: 'long-job', background: true, check_interval: 30 }));
    writeFileSync(join(children[0]!.dir, 'output'), 'step 1\nstep 2\n');

    for (let step = 0; step < 3; step++) await clock.advance(30_000);
    expect(harness.deliverer.ids()).toEqual([1, 2, 3].map((n) => `proc:${id}:progress:${n}`));
    const last = harness.deliverer.deliveries[2]!;
    expect(last.request.kind).toBe('notification');
    expect(last.request.text).toContain(`Process ${id} still running, 1m 30s so far`);
    expect(last.request.text).toContain('step 2');
    expect(last.session).toMatchObject({ chatId: ORIGIN_SESSION.chatId, threadId: ORIGIN_SESSION.threadId });
    expect((await harness.table.get(id))?.progressSent).toBe(3);

    writeFileSync(join(children[0]!.dir, 'status'), '0\n');
    children[0]!.emit('exit', 0, null);
    await expect.poll(() => harness.table.get(id)).toBeUndefined();
    await clock.advance(120_000);
    // Nothing asked for its end, and no progress after it.
    expect(harness.deliverer.ids()).toHaveLength(3);
    await harness.terminal.watchers.stop();
    expect(clock.pending).toBe(0);
  });
});
