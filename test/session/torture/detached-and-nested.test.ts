import { describe, it } from 'vitest';
import type { Session } from '../../../src/session/index.js';
import {
  BAGGAGE_FIELDS,
  SESSIONS,
  Probe,
  expectIsolation,
  expectLeak,
  forEachSession,
  hop,
  makeSessions,
  observedFromBaggage,
  observedFromEnv,
  rngFor,
} from './harness.js';
import { runtimes, type SessionRuntime } from './runtime.js';

const PEER = 'http://127.0.0.1:9/';

/** What a subprocess spawned here would be told, and what a downstream call would carry. */
function checkCarriers(probe: Probe, runtime: SessionRuntime, expected: Session | undefined, where: string): void {
  probe.compare(expected, observedFromEnv(runtime.childEnv()), `${where}: child env`);
  probe.compare(expected, observedFromBaggage(runtime.outboundHeaders(PEER)['baggage']), `${where}: baggage`, BAGGAGE_FIELDS);
}

describe.each(runtimes)('detached and nested: $name runtime', (runtime) => {
  const handlers = makeSessions(SESSIONS, 'a');
  const others = makeSessions(SESSIONS, 'b');
  const n = handlers.length;

  /**
   * Session A's handler dispatches the handler of message B through `start`. Until B's handler
   * enters B, it must see no session at all: not A (pitfall: Inherited routing), and a subprocess spawned in
   * that window must not get A's routing (pitfall: Inherited environment in a child process).
   */
  async function dispatchFromHandlers(probe: Probe, start: <T>(fn: () => T) => T): Promise<void> {
    const dispatched: Promise<void>[] = [];
    await forEachSession(runtime, handlers, 'dispatch', async (a, index, rng) => {
      await hop(rng);
      const b = others[index]!;
      const taskRng = rngFor('dispatched', index);
      dispatched.push(
        start(async () => {
          probe.read(undefined, 'dispatched, before entering its session');
          await hop(taskRng);
          probe.read(undefined, 'dispatched, after a hop, before entering its session');
          checkCarriers(probe, runtime, undefined, 'dispatched, before entering its session');
          await runtime.run(b, async () => {
            probe.read(b, 'dispatched handler');
            await hop(taskRng);
            probe.read(b, 'dispatched handler after a hop');
          });
        }),
      );
      probe.read(a, 'handler after dispatching');
      await hop(rng);
      probe.read(a, 'handler after a hop');
    });
    await Promise.all(dispatched);
  }

  it('a handler dispatched from inside another session’s handler starts with no session, then enters its own', async () => {
    const probe = new Probe(runtime);
    await dispatchFromHandlers(probe, runtime.detached);
    await expectIsolation(probe, { reads: n * 8, spans: n * 6 });
  });

  it('pitfall: dispatched without detached(), the new handler starts in the dispatching session (pitfall: Inherited routing)', async () => {
    const probe = new Probe(runtime);
    await dispatchFromHandlers(probe, (fn) => fn());
    // The real runtime gets exactly the four reads of the window wrong: they see A.
    await expectLeak(probe, { reads: n * 8, realMismatches: n * 4 });
  });

  it('nested sessions: the inner one replaces the whole routing (thread included), the outer one is intact around it', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, handlers, 'nested', async (outer, index, rng) => {
      // Neighbours, so a third of the pairs mix a thread with no thread.
      const inner = others[(index + 1) % n]!;
      const innerRng = rngFor('inner', index);
      await hop(rng);
      const nested = runtime.run(inner, async () => {
        probe.read(inner, 'inner session');
        await hop(innerRng);
        probe.read(inner, 'inner session after a hop');
        checkCarriers(probe, runtime, inner, 'inner session');
      });
      probe.read(outer, 'outer while the inner session runs');
      await nested;
      probe.read(outer, 'outer after the inner session');
      await hop(rng);
      checkCarriers(probe, runtime, outer, 'outer after a hop');
    });
    await expectIsolation(probe, { reads: n * 8, spans: n * 4 });
  });
});
