import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stopThenExit } from '../../src/cli/stop-then-exit.js';

function run(stop: () => Promise<void>, shutdown: () => Promise<void> = () => Promise.resolve()) {
  const steps: string[] = [];
  const log: string[] = [];
  const done = stopThenExit(
    { stop: () => stop().finally(() => steps.push('stop')) },
    { shutdown: () => shutdown().finally(() => steps.push('flush')) },
    pino({ level: 'error' }, { write: (line: string) => void log.push(line) }),
    (code) => void steps.push(`exit ${code}`),
  );
  return { done, steps, log };
}

describe('stopThenExit', () => {
  it('stops, flushes spans, exits 0', async () => {
    const { done, steps } = run(() => Promise.resolve());
    await done;
    expect(steps).toEqual(['stop', 'flush', 'exit 0']);
  });

  it('still flushes spans when stopping fails, logs why, and exits 1', async () => {
    const { done, steps, log } = run(() => Promise.reject(new Error('store thread died')));
    await done;
    expect(steps).toEqual(['stop', 'flush', 'exit 1']);
    expect(log.join('')).toContain('store thread died');
  });

  it('exits 1 when spans cannot be flushed', async () => {
    const { done, steps, log } = run(
      () => Promise.resolve(),
      () => Promise.reject(new Error('collector gone')),
    );
    await done;
    expect(steps).toEqual(['stop', 'flush', 'exit 1']);
    expect(log.join('')).toContain('collector gone');
  });
});
