import { afterEach, describe, expect, it } from 'vitest';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { BoundedTail } from '../../../src/tools/terminal/bounded-tail.js';
import { ORIGIN_SESSION, terminalHarness, useDataDirs } from './terminal-fixture.js';

useGlobalTracing();
const dataDir = useDataDirs();

/** True while a process with this pid exists (a zombie counts: the caller waits it out). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('terminal, foreground', () => {
  const savedThread = process.env['THREADLINE_SESSION_THREAD_ID'];
  afterEach(() => {
    if (savedThread === undefined) delete process.env['THREADLINE_SESSION_THREAD_ID'];
    else process.env['THREADLINE_SESSION_THREAD_ID'] = savedThread;
  });

  it('answers with the exit code and the output, stdout and stderr together', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    const result = await harness.call('terminal', { command: 'echo out; echo err >&2; exit 3' });
    expect(result.text).toMatch(/^exit 3 \(/);
    expect(result.text).toContain('out\nerr\n');
  });

  it('kills the whole process group after the timeout, children included', async () => {
    const harness = terminalHarness({ dataDir: dataDir(), config: { timeoutMs: 400 } });
    const result = await harness.call('terminal', { command: 'sleep 1000 & echo "child $!"; wait' });
    expect(result.text).toMatch(/^timed out after 0\.4s: its process group was killed/);
    const child = Number(/child (\d+)/.exec(result.text)?.[1]);
    expect(child).toBeGreaterThan(0);
    // The sleep was reparented when its shell died; it is gone once init has reaped it.
    await expect.poll(() => alive(child), { timeout: 5000 }).toBe(false);
  });

  it('keeps only the tail of a huge output, in memory and in the answer', async () => {
    const harness = terminalHarness({ dataDir: dataDir(), config: { tailChars: 100 } });
    const result = await harness.call('terminal', { command: 'head -c 3000000 /dev/zero | tr "\\0" a; echo; echo THE-END' });
    expect(result.text).toContain('THE-END');
    expect(result.text).toContain('last 100 characters shown');
    expect(result.text.length).toBeLessThan(200);
  });

  it('kills the command when the call is aborted (/stop)', async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    const abort = new AbortController();
    const started = Date.now();
    const running = harness.call('terminal', { command: 'echo ready; exec sleep 1000' }, { signal: abort.signal });
    // Aborted at once: before or after the spawn, a never-ending command must not hold the call.
    setImmediate(() => abort.abort());
    const result = await running;
    expect(result.text).toMatch(/^stopped: its process group was killed/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("gives the child the session's thread", async () => {
    const harness = terminalHarness({ dataDir: dataDir() });
    const result = await harness.call('terminal', { command: 'echo "thread=$THREADLINE_SESSION_THREAD_ID"' });
    expect(result.text).toContain(`thread=${ORIGIN_SESSION.threadId}\n`);
  });

  it("never gives the child the gateway's own stale thread when the session has none", async () => {
    process.env['THREADLINE_SESSION_THREAD_ID'] = 'stale';
    const harness = terminalHarness({ dataDir: dataDir() });
    const { threadId: _dropped, ...noThread } = ORIGIN_SESSION;
    const result = await harness.call('terminal', { command: 'echo "thread=[$THREADLINE_SESSION_THREAD_ID]"' }, { session: noThread });
    expect(result.text).toContain('thread=[]\n');
  });
});

describe('BoundedTail', () => {
  it('never holds more than its limit, whatever the chunks', () => {
    const tail = new BoundedTail(10);
    tail.append('x'.repeat(100_000));
    expect(tail.tail).toHaveLength(10);
    tail.append('0123456789ab');
    expect(tail.tail).toBe('23456789ab');
    tail.append('cd');
    expect(tail.tail).toBe('456789abcd');
    expect(tail.dropped).toBe(100_004);
  });
});
