import { describe, expect, it } from 'vitest';
import { SessionScheduler } from '../../src/gateway/session-scheduler.js';
import { getSession, withSession } from '../../src/session/index.js';

interface Job {
  readonly sessionId: string;
  readonly name: string;
}

/** A scheduler whose jobs wait until released by name, recording what ran and was aborted. */
function harness(concurrency: number, capacity: number) {
  const started: string[] = [];
  const aborted: string[] = [];
  const releases = new Map<string, () => void>();
  const scheduler = new SessionScheduler<Job>(
    (job, signal) =>
      new Promise<void>((resolve) => {
        started.push(job.name);
        signal.addEventListener('abort', () => {
          aborted.push(job.name);
          resolve();
        });
        releases.set(job.name, resolve);
      }),
    { concurrency, capacity },
  );
  const release = async (name: string) => {
    releases.get(name)!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { scheduler, started, aborted, release };
}

describe('SessionScheduler', () => {
  it('runs one session in order and sessions side by side, within the concurrency limit', async () => {
    const { scheduler, started, release } = harness(2, 10);
    for (const name of ['a1', 'a2', 'b1', 'c1']) scheduler.offer({ sessionId: name[0]!, name });
    expect(started).toEqual(['a1', 'b1']);
    await release('a1');
    expect(started).toEqual(['a1', 'b1', 'c1']);
    await release('b1');
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2']);
  });

  it('refuses past its capacity unless forced, and frees room as jobs finish', async () => {
    const { scheduler, release } = harness(1, 2);
    expect(scheduler.offer({ sessionId: 'a', name: 'a1' })).toBe(true);
    expect(scheduler.offer({ sessionId: 'b', name: 'b1' })).toBe(true);
    expect(scheduler.offer({ sessionId: 'c', name: 'c1' })).toBe(false);
    expect(scheduler.offer({ sessionId: 'c', name: 'c2' }, true)).toBe(true);
    expect(scheduler.size).toBe(3);
    await release('a1');
    expect(scheduler.size).toBe(2);
  });

  it('aborts only the running job of the named session', () => {
    const { scheduler, aborted } = harness(2, 10);
    scheduler.offer({ sessionId: 'a', name: 'a1' });
    scheduler.offer({ sessionId: 'b', name: 'b1' });
    expect(scheduler.abort('a', 'stop')).toBe(true);
    expect(scheduler.abort('z', 'stop')).toBe(false);
    expect(aborted).toEqual(['a1']);
  });

  it('on close aborts running jobs, starts no waiting one, and resolves when they returned', async () => {
    const { scheduler, started, aborted } = harness(1, 10);
    scheduler.offer({ sessionId: 'a', name: 'a1' });
    scheduler.offer({ sessionId: 'b', name: 'b1' });
    await scheduler.close('stopping');
    expect(aborted).toEqual(['a1']);
    expect(started).toEqual(['a1']);
  });

  it('starts every job from the root context, whatever context offered it or finished before it', async () => {
    const seen: unknown[] = [];
    const scheduler = new SessionScheduler<Job>(
      async () => {
        seen.push(getSession());
      },
      { concurrency: 1, capacity: 10 },
    );
    withSession({ platform: 'webhook', chatType: 'dm', chatId: 'offerer' }, () => {
      scheduler.offer({ sessionId: 'a', name: 'a1' });
      scheduler.offer({ sessionId: 'b', name: 'b1' });
    });
    await scheduler.idle();
    expect(seen).toEqual([undefined, undefined]);
  });

  it('tells a job that it was aborted, by /stop or by close(), with the reason', async () => {
    const seen: unknown[] = [];
    let finish!: () => void;
    const scheduler = new SessionScheduler<Job>(
      async (_job, signal) => {
        await new Promise<void>((resolve) => (finish = resolve));
        seen.push(signal.aborted && (signal.reason as Error).message);
      },
      { concurrency: 1, capacity: 10 },
    );
    scheduler.offer({ sessionId: 'a', name: 'a1' });
    expect(scheduler.abort('a', 'stopped by /stop')).toBe(true);
    finish();
    await scheduler.idle();
    scheduler.offer({ sessionId: 'a', name: 'a2' });
    const closed = scheduler.close('the gateway is stopping');
    finish();
    await closed;
    expect(seen).toEqual(['stopped by /stop', 'the gateway is stopping']);
  });
});
