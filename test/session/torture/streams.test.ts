import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'vitest';
import type { Session } from '../../../src/session/index.js';
import {
  SESSIONS,
  Probe,
  callbackRoundTrip,
  expectIsolation,
  expectLeak,
  forEachSession,
  hop,
  makeSessions,
  type Rng,
} from './harness.js';
import { runtimes } from './runtime.js';

const CHUNKS = 3;

async function* source(probe: Probe, session: Session, rng: Rng): AsyncGenerator<number> {
  for (let k = 0; k < CHUNKS; k++) {
    await hop(rng);
    probe.read(session, 'pipeline source');
    yield k;
  }
}

/** Pushes CHUNKS chunks, each from a timer; reads in every _read call (one per push, end included). */
function timedReadable(probe: Probe, session: Session, rng: Rng): Readable {
  let next = 0;
  return new Readable({
    objectMode: true,
    read() {
      probe.read(session, 'Readable _read');
      setTimeout(() => this.push(next < CHUNKS ? next++ : null), Math.floor(rng() * 3));
    },
  });
}

/**
 * A transform shared by all sessions and created outside any, like a log shipper: it runs
 * each chunk's callback from wherever the stream happens to be driven from.
 */
function sharedTransform(): Transform {
  return new Transform({
    objectMode: true,
    highWaterMark: 16,
    transform(callback: () => Promise<void>, _encoding, done) {
      setImmediate(() => {
        void callback();
        done();
      });
    },
  }).resume();
}

describe.each(runtimes)('streams: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 's');
  const n = sessions.length;

  it('a per-session pipeline: source generator, Transform and Writable callbacks keep the session', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, sessions, 'pipeline', async (session, _index, rng) => {
      await pipeline(
        Readable.from(source(probe, session, rng)),
        new Transform({
          objectMode: true,
          transform(chunk: number, _encoding, done) {
            probe.read(session, 'Transform');
            hop(rng).then(() => {
              probe.read(session, 'Transform after a hop');
              done(null, chunk);
            }, done);
          },
        }),
        new Writable({
          objectMode: true,
          write(_chunk: number, _encoding, done) {
            probe.read(session, 'Writable');
            setImmediate(done);
          },
        }),
      );
      probe.read(session, 'after the pipeline');
    });
    const reads = n * (4 * CHUNKS + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('for await over a Readable fed by timers, and its data events, keep the session', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, sessions, 'for await', async (session, _index, rng) => {
      for await (const _ of timedReadable(probe, session, rng)) {
        probe.read(session, 'for await over a Readable');
        await hop(rng);
      }
      const events = timedReadable(probe, session, rng);
      events.on('data', () => probe.read(session, "'data' listener"));
      await new Promise<void>((resolve) => events.on('end', () => resolve(probe.read(session, "'end' listener"))));
    });
    // _read runs once per push, the end included, in both streams.
    const reads = n * (2 * (CHUNKS + 1) + CHUNKS + CHUNKS + 1);
    await expectIsolation(probe, { reads, spans: reads });
  });

  it('a Transform shared by all sessions: callbacks bound with bind() see their own session', async () => {
    const probe = new Probe(runtime);
    const shared = runtime.detached(sharedTransform);
    await forEachSession(runtime, sessions, 'shared transform bound', async (session, _index, rng) => {
      await hop(rng);
      await callbackRoundTrip(probe, session, rng, 'shared Transform', (callback) => shared.write(callback), runtime.bind);
    });
    shared.end();
    await expectIsolation(probe, { reads: 3 * n, spans: 3 * n });
  });

  it('pitfall: a Transform shared by all sessions runs unbound callbacks in whichever session drives it', async () => {
    const probe = new Probe(runtime);
    const shared = runtime.detached(sharedTransform);
    await forEachSession(runtime, sessions, 'shared transform unbound', async (session, _index, rng) => {
      await hop(rng);
      await callbackRoundTrip(probe, session, rng, 'shared Transform', (callback) => shared.write(callback));
    });
    shared.end();
    await expectLeak(probe, { reads: 3 * n });
  });
});
