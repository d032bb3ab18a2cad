import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assertThreadlineError, rejectionOf } from '../../helpers/errors.js';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { ManualClock } from '../../../src/tools/clock.js';
import { KILL_GRACE_MS, signalGroup } from '../../../src/tools/terminal/process-group.js';
import { fakeSpawner } from './fake-spawner.js';
import { OTHER_SESSION, ORIGIN_SESSION, startedId, terminalHarness, useDataDirs } from './terminal-fixture.js';

useGlobalTracing();
const dataDir = useDataDirs();

describe('kill_process', () => {
  it('kills a command of this chat; the wrapper outlives SIGTERM to record how the command ended', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    await harness.terminal.watchers.start();
    const command = "trap 'echo cleaning up; exit 3' TERM; echo ready; while :; do sleep 0.05; done";
    const id = startedId(await harness.call('terminal', { command, background: true, notify_on_complete: true }));
    const output = `${harness.services.dataDir}/processes/${id}/output`;
    // Its trap is set once it has said ready.
    await expect.poll(() => existsSync(output) && readFileSync(output, 'utf8').includes('ready')).toBe(true);
    const answer = await harness.call('kill_process', { id });
    expect(answer.text).toMatch(new RegExp(`^Killing ${id} \\(trap 'echo cleaning up`));
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} was killed with /kill \\(exit 3\\)`));
    expect(done.request.text).toMatch(/ready\n[^]*cleaning up\n/);
  });

  it('sends SIGKILL to a group that ignores SIGTERM, after the grace', async () => {
    const clock = new ManualClock();
    const harness = terminalHarness({ dataDir: dataDir(), clock });
    await harness.terminal.watchers.start();
    const command = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    const id = startedId(await harness.call('terminal', { command, background: true, notify_on_complete: true }));
    const { pid } = (await harness.table.get(id))!;
    // `ready` is written after the trap is set: a TERM before it would end the command itself.
    const output = `${harness.services.dataDir}/processes/${id}/output`;
    await expect.poll(() => existsSync(output) && readFileSync(output, 'utf8').includes('ready')).toBe(true);
    await harness.call('kill_process', { id });
    await clock.advance(KILL_GRACE_MS);
    const done = await harness.deliverer.waitFor(`proc:${id}:done`);
    await harness.terminal.watchers.stop();
    expect(done.request.text).toMatch(new RegExp(`^Process ${id} was killed with /kill \\(ended by SIGKILL\\)`));
    // Its members are gone once reaped (the command by init, as it lost its parent).
    await expect.poll(() => signalGroup(pid, 0), { timeout: 5000 }).toBe(false);
  });

  it('refuses a process of another chat as unknown, and leaves it running', async () => {
    const { spawner, children } = fakeSpawner();
    const harness = terminalHarness({ dataDir: dataDir(), spawner });
    const id = startedId(await harness.call('terminal', { command: 'make', background: true }));
    const error = assertThreadlineError(await rejectionOf(harness.call('kill_process', { id }, { session: OTHER_SESSION })), 'TL_TOOL_INPUT');
    expect(error.message).toBe(`no process ${id} in this chat (list_processes, or /jobs, shows them)`);
    // Another thread of the same chat is another destination too.
    const otherThread = { ...ORIGIN_SESSION, threadId: '43' };
    assertThreadlineError(await rejectionOf(harness.call('kill_process', { id }, { session: otherThread })), 'TL_TOOL_INPUT');
    expect(await harness.table.get(id)).toBeDefined();
    expect(children[0]!.stdin.said).toEqual(['run']);
  });
});

describe('list_processes', () => {
  it("lists this chat's and thread's commands only", async () => {
    const { spawner } = fakeSpawner();
    const harness = terminalHarness({ dataDir: dataDir(), spawner });
    const mine = startedId(await harness.call('terminal', { command: 'make build', background: true }));
    const theirs = startedId(await harness.call('terminal', { command: 'make test', background: true }, { session: OTHER_SESSION }));
    const listed = await harness.call('list_processes', {});
    expect(listed.text).toMatch(new RegExp(`^${mine} pid \\d+ running [0-9.]+s: make build$`));
    expect(listed.text).not.toContain(theirs);
    expect((await harness.call('list_processes', {}, { session: { ...ORIGIN_SESSION, threadId: '9' } })).text).toBe('No background commands in this chat.');
  });
});

describe('terminal refusals', () => {
  it('refuses past the per-chat and the total caps, without running the command', async () => {
    const { spawner, children } = fakeSpawner();
    const dir = dataDir();
    const harness = terminalHarness({ dataDir: dir, spawner, config: { maxPerChat: 2, maxTotal: 3 } });
    for (let index = 0; index < 2; index++) await harness.call('terminal', { command: 'true', background: true });
    const perChat = assertThreadlineError(await rejectionOf(harness.call('terminal', { command: 'rm -rf x', background: true })), 'TL_TOOL_LIMIT');
    expect(perChat.message).toContain('THREADLINE_TERMINAL_MAX_PER_CHAT');
    expect(children[2]!.stdin.said).toEqual(['abort']);
    expect(existsSync(children[2]!.dir)).toBe(false);

    await harness.call('terminal', { command: 'true', background: true }, { session: OTHER_SESSION });
    const total = assertThreadlineError(
      await rejectionOf(harness.call('terminal', { command: 'true', background: true }, { session: { ...OTHER_SESSION, chatId: 'C1000' } })),
      'TL_TOOL_LIMIT',
    );
    expect(total.message).toContain('THREADLINE_TERMINAL_MAX_TOTAL');
    expect(children[4]!.stdin.said).toEqual(['abort']);
    expect(await harness.table.all()).toHaveLength(3);
  });

  it('refuses a check_interval below the minimum or above a day, saying the range', async () => {
    const { spawner, children } = fakeSpawner();
    const harness = terminalHarness({ dataDir: dataDir(), spawner });
    for (const seconds of [29, 86_401, 0, -5]) {
      const error = assertThreadlineError(
        await rejectionOf(harness.call('terminal', { command: 'true', background: true, check_interval: seconds })),
        'TL_TOOL_INPUT',
      );
      expect(error.message).toContain('check_interval must be between 30 and 86400 seconds');
    }
    expect(children).toHaveLength(0);
  });

  it('refuses a command holding a NUL character with TL_TOOL_INPUT, in the foreground and the background', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    for (const background of [false, true]) {
      const error = assertThreadlineError(await rejectionOf(harness.call('terminal', { command: 'echo a\u0000b', background })), 'TL_TOOL_INPUT');
      expect(error.message).toContain('NUL');
    }
    expect(await harness.table.all()).toEqual([]);
  });

  it('refuses background options on a foreground command', async () => {
    const harness = terminalHarness({ dataDir: dataDir(), spawner: fakeSpawner().spawner });
    assertThreadlineError(await rejectionOf(harness.call('terminal', { command: 'true', notify_on_complete: true })), 'TL_TOOL_INPUT');
  });

  it('refuses every tool with TL_TOOL_DISABLED unless THREADLINE_TERMINAL=1', async () => {
    const { spawner, children } = fakeSpawner();
    const harness = terminalHarness({ dataDir: dataDir(), spawner, config: { enabled: false } });
    for (const [name, args] of [
      ['terminal', { command: 'true' }],
      ['terminal', { command: 'true', background: true }],
      ['list_processes', {}],
      ['kill_process', { id: 'pabcde' }],
    ] as const) {
      const error = assertThreadlineError(await rejectionOf(harness.call(name, args)), 'TL_TOOL_DISABLED');
      expect(error.message).toContain('THREADLINE_TERMINAL=1');
    }
    expect(children).toHaveLength(0);
    expect(harness.terminal.tools.every((tool) => tool.adminOnly)).toBe(true);
  });
});
