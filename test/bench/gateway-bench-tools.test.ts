import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { areaOf, sumProfile } from '../../bench/gateway/cpu-profile.js';
import { cpuTime } from '../../bench/gateway/cpu-time.js';

const dir = mkdtempSync(join(tmpdir(), 'bench-tools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the gateway bench tools', () => {
  it('counts CPU the process spends on any thread, the event loop apart', () => {
    const before = cpuTime(process.pid);
    // 60 ms of CPU by the kernel's other count (getrusage), not of wall time: on a loaded
    // machine 60 ms of wall time can hold less than the 10 ms tick /proc counts in.
    const start = process.cpuUsage();
    while (process.cpuUsage(start).user < 60_000) Math.sqrt(Math.random());
    const after = cpuTime(process.pid);
    expect(after.mainUs - before.mainUs).toBeGreaterThan(0);
    expect(after.totalUs).toBeGreaterThanOrEqual(after.mainUs);
  });

  it('sums only the samples inside the windows, by area and function, leaving idle out', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
    const profile = {
      startTime: 1_000,
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 4] },
        { id: 2, callFrame: frame('startSpan', 'file:///x/node_modules/@opentelemetry/sdk-trace-base/build/src/Tracer.js') },
        { id: 3, callFrame: frame('turn', 'file:///app/dist/gateway/gateway.js') },
        { id: 4, callFrame: frame('(idle)', '') },
      ],
      // At 1010, 1020, 1030, 1040, 1050: each sample stands for the 10 µs until the next.
      samples: [2, 3, 4, 2, 3],
      timeDeltas: [10, 10, 10, 10, 10],
    };
    const path = join(dir, 'p.cpuprofile');
    writeFileSync(path, JSON.stringify(profile));
    const sums = sumProfile(path, [[1_015, 1_045]], '/app/dist');
    expect(Object.fromEntries(sums.byArea)).toEqual({ '@opentelemetry/sdk-trace-base': 10, 'threadline gateway/gateway.js': 10 });
    expect(sums.busyUs).toBe(20);
    expect([...sums.callers.get('turn threadline gateway/gateway.js:1')!.keys()]).toEqual(['(root) (root):1']);
    expect(areaOf(frame('x', 'node:internal/async_hooks'), '/app/dist')).toBe('node:async_hooks');
  });
});
