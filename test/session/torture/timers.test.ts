import { setImmediate as immediatePromise, setTimeout as timeoutPromise } from 'node:timers/promises';
import { describe, it } from 'vitest';
import type { Session } from '../../../src/session/index.js';
import { SESSIONS, Probe, expectIsolation, expectLeak, forEachSession, hop, makeSessions, type Rng } from './harness.js';
import { runtimes } from './runtime.js';

type Step = (probe: Probe, session: Session, rng: Rng) => Promise<void>;

/** Each step reads the session inside the callback a timer primitive runs. */
const STEPS: readonly Step[] = [
  (probe, session, rng) =>
    new Promise((resolve) => setTimeout(() => resolve(probe.read(session, 'setTimeout')), Math.floor(rng() * 4))),
  (probe, session, rng) =>
    new Promise((resolve) => {
      let ticks = 0;
      const timer = setInterval(() => {
        probe.read(session, 'setInterval');
        if (++ticks === 3) {
          clearInterval(timer);
          resolve();
        }
      }, 1 + Math.floor(rng() * 3));
    }),
  (probe, session) => new Promise((resolve) => setImmediate(() => resolve(probe.read(session, 'setImmediate')))),
  (probe, session) => new Promise((resolve) => queueMicrotask(() => resolve(probe.read(session, 'queueMicrotask')))),
  (probe, session) => new Promise((resolve) => process.nextTick(() => resolve(probe.read(session, 'nextTick')))),
  async (probe, session, rng) => {
    await timeoutPromise(Math.floor(rng() * 4));
    await immediatePromise();
    probe.read(session, 'timers/promises');
  },
];
const READS_PER_PASS = STEPS.length + 2; // setInterval reads three times

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Ticks `ticks` times, 1 ms apart, reading the session each time; long-lived loops must see none. */
function pollLoop(probe: Probe, ticks: number, expected: Session | undefined): Promise<void> {
  return new Promise((resolve) => {
    let count = 0;
    const timer = setInterval(() => {
      probe.read(expected, 'poll tick');
      if (++count === ticks) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
}

describe.each(runtimes)('timers: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 't');
  const n = sessions.length;

  it('setTimeout, setInterval, setImmediate, queueMicrotask, nextTick and timers/promises callbacks see their own session', async () => {
    const probe = new Probe(runtime);
    const passes = 2;
    await forEachSession(runtime, sessions, 'timers', async (session, _index, rng) => {
      for (let pass = 0; pass < passes; pass++) {
        for (const step of shuffled(STEPS, rng)) await step(probe, session, rng);
      }
      probe.read(session, 'after timers');
    });
    const reads = n * (passes * READS_PER_PASS + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('a timer created in a session fires after its handler returned and other sessions ran, in that session', async () => {
    const probe = new Probe(runtime);
    const pending: Promise<void>[] = [];
    await forEachSession(runtime, sessions, 'later', async (session, _index, rng) => {
      await hop(rng);
      pending.push(
        new Promise((resolve) => setTimeout(() => resolve(probe.read(session, 'late timeout')), 5 + Math.floor(rng() * 10))),
        pollLoop(probe, 3, session),
      );
    });
    // Every handler has returned; the timers they left behind fire from here on.
    await Promise.all(pending);
    await expectIsolation(probe, { reads: n * 4, spans: n * 4 });
  });

  const TICKS = 40;

  it("a poll loop started with detached() inside a session sees no session on any tick (pitfall: Long-lived loops holding a request's context)", async () => {
    const probe = new Probe(runtime);
    let loop: Promise<void> | undefined;
    await forEachSession(runtime, sessions, 'detached poll', async (session, index, rng) => {
      if (index === 0) loop = runtime.detached(() => pollLoop(probe, TICKS, undefined));
      for (let step = 0; step < 5; step++) {
        await hop(rng);
        probe.read(session, 'handler step');
      }
    });
    await loop;
    await expectIsolation(probe, { reads: n * 5 + TICKS, spans: n * 5 + TICKS });
  });

  it('pitfall: a poll loop started inside a session without detached() carries that session on every tick', async () => {
    const probe = new Probe(runtime);
    let loop: Promise<void> | undefined;
    await forEachSession(runtime, sessions, 'inherited poll', async (_session, index, rng) => {
      if (index === 0) loop = pollLoop(probe, TICKS, undefined);
      await hop(rng);
    });
    await loop;
    // The real runtime reads session 0 on every tick: that is what runDetached prevents.
    await expectLeak(probe, { reads: TICKS, realMismatches: TICKS });
  });
});
