import { describe, it } from 'vitest';
import type { Session } from '../../../src/session/index.js';
import { SESSIONS, Probe, expectIsolation, forEachSession, hop, makeSessions, type Rng } from './harness.js';
import { runtimes } from './runtime.js';

const DEPTH = 3;

/** Nested async functions, a hop between entry and exit at every level. */
async function chain(probe: Probe, session: Session, rng: Rng, depth: number): Promise<void> {
  probe.read(session, `await chain entry ${depth}`);
  await hop(rng);
  if (depth > 0) await chain(probe, session, rng, depth - 1);
  await hop(rng);
  probe.read(session, `await chain exit ${depth}`);
}

async function* generate(probe: Probe, session: Session, rng: Rng, count: number): AsyncGenerator<number> {
  for (let k = 0; k < count; k++) {
    await hop(rng);
    probe.read(session, 'async generator body');
    yield k;
    probe.read(session, 'async generator resumed');
  }
}

async function branch(probe: Probe, session: Session, rng: Rng, where: string, hops: number): Promise<void> {
  for (let k = 0; k < hops; k++) await hop(rng);
  probe.read(session, where);
}

describe.each(runtimes)('promises: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'p');
  const n = sessions.length;

  it('await chains and .then callbacks keep the session', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, sessions, 'await', async (session, _index, rng) => {
      await chain(probe, session, rng, DEPTH);
      await Promise.resolve()
        .then(() => hop(rng))
        .then(() => probe.read(session, '.then callback'));
    });
    const reads = n * (2 * (DEPTH + 1) + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('Promise.all, race, allSettled and any: every branch and the code after them keep the session', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, sessions, 'combinators', async (session, _index, rng) => {
      await Promise.all([1, 2, 3].map((hops) => branch(probe, session, rng, 'Promise.all branch', hops)));
      probe.read(session, 'after Promise.all');
      const racers = [1, 2].map((hops) => branch(probe, session, rng, 'Promise.race racer', hops));
      await Promise.race(racers);
      probe.read(session, 'after Promise.race');
      await Promise.allSettled(racers); // the loser reads too
      await Promise.any([branch(probe, session, rng, 'Promise.any branch', 1), Promise.reject(new Error('lost'))]);
      probe.read(session, 'after Promise.any');
    });
    const reads = n * (3 + 1 + 2 + 1 + 1 + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('async generators: the generator body and the for-await loop keep the session', async () => {
    const probe = new Probe(runtime);
    const count = 3;
    await forEachSession(runtime, sessions, 'generators', async (session, _index, rng) => {
      for await (const _ of generate(probe, session, rng, count)) {
        probe.read(session, 'for await body');
        await hop(rng);
      }
      probe.read(session, 'after for await');
    });
    const reads = n * (3 * count + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('awaiting a promise made in another session, outside any session, or a thenable keeps the caller’s session', async () => {
    const probe = new Probe(runtime);
    const [creator] = makeSessions(1, 'creator');
    // A cache entry filled by one session and a readiness signal from a detached task: both
    // settle in someone else's context; the awaiting session must not switch to it.
    const cached = runtime.run(creator!, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'cached';
    });
    const ready = runtime.detached(() => new Promise<void>((resolve) => setTimeout(resolve, 10)));
    await forEachSession(runtime, sessions, 'foreign promises', async (session, _index, rng) => {
      await cached;
      probe.read(session, 'after a promise made in another session');
      await ready;
      probe.read(session, 'after a promise made outside any session');
      await {
        then(resolve: () => void) {
          probe.read(session, 'thenable then');
          setTimeout(resolve, Math.floor(rng() * 3));
        },
      };
      probe.read(session, 'after a thenable');
    });
    const reads = n * 4;
    await expectIsolation(probe, { reads, spans: reads });
  });
});
