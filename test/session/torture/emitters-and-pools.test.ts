// Pitfall "Callbacks in their creator's context": emitters, queues and pools run callbacks in the context of whoever created or
// drained them. Each case shows the pitfall (even the real runtime reads the wrong session
// without bind) and the fix (bind at the boundary: every callback reads its own).
import { EventEmitter } from 'node:events';
import { describe, it } from 'vitest';
import type { Session } from '../../../src/session/index.js';
import { SESSIONS, Probe, callbackRoundTrip, expectIsolation, expectLeak, forEachSession, hop, makeSessions } from './harness.js';
import { runtimes, type SessionRuntime } from './runtime.js';

type Callback = () => Promise<void>;

interface Dispatcher {
  schedule(index: number, callback: Callback): void;
  close(): void;
}

/** A reply bus that emits from its own drain timer, started when it was created. */
class ReplyBus extends EventEmitter {
  private readonly queue: number[] = [];
  private readonly timer = setInterval(() => {
    for (const index of this.queue.splice(0)) this.emit(`reply:${index}`);
  }, 1);

  request(index: number, listener: Callback): void {
    this.once(`reply:${index}`, listener);
    this.queue.push(index);
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/** A fixed set of worker loops started at construction, like a connection or thread pool. */
class CallbackPool {
  private readonly jobs: Callback[] = [];
  private readonly idle: (() => void)[] = [];
  private closed = false;

  constructor(size: number) {
    for (let k = 0; k < size; k++) void this.work();
  }

  submit(job: Callback): void {
    this.jobs.push(job);
    this.idle.shift()?.();
  }

  close(): void {
    this.closed = true;
    for (const wake of this.idle.splice(0)) wake();
  }

  private async work(): Promise<void> {
    while (!this.closed) {
      const job = this.jobs.shift();
      if (job !== undefined) await job();
      else await new Promise<void>((resolve) => this.idle.push(resolve));
    }
  }
}

/** Callbacks drained by a setImmediate scheduled by whoever found the queue empty (pitfall: Orphan traces from a deferred queue). */
class ImmediateQueue {
  private pending: Callback[] = [];

  push(callback: Callback): void {
    if (this.pending.push(callback) === 1) {
      setImmediate(() => {
        for (const queued of this.pending.splice(0)) void queued();
      });
    }
  }
}

interface Case {
  readonly name: string;
  /** Where the shared structure is created: in another session, or outside any. */
  readonly create: (runtime: SessionRuntime, creator: Session) => Dispatcher;
  /** Hop before scheduling; without it every session schedules in the same tick. */
  readonly hopFirst: boolean;
  /** How many reads the real runtime gets wrong without bind. */
  readonly realLeaks: (sessions: number) => number;
}

const CASES: readonly Case[] = [
  {
    name: 'EventEmitter created in another session',
    create: (runtime, creator) => {
      const bus = runtime.run(creator, () => new ReplyBus());
      return { schedule: (index, callback) => bus.request(index, callback), close: () => bus.close() };
    },
    hopFirst: true,
    realLeaks: (sessions) => 2 * sessions,
  },
  {
    name: 'callback pool created outside any session',
    create: (runtime) => {
      const pool = runtime.detached(() => new CallbackPool(8));
      return { schedule: (_index, callback) => pool.submit(callback), close: () => pool.close() };
    },
    hopFirst: true,
    realLeaks: (sessions) => 2 * sessions,
  },
  {
    name: 'setImmediate-drained queue created outside any session',
    create: (runtime) => {
      const queue = runtime.detached(() => new ImmediateQueue());
      return { schedule: (_index, callback) => queue.push(callback), close: () => {} };
    },
    hopFirst: false,
    // Drained once, in the context of the first session that queued; only its reads are right.
    realLeaks: (sessions) => 2 * (sessions - 1),
  },
];

describe.each(runtimes)('emitters and pools: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'e');
  const [creator] = makeSessions(1, 'creator');
  const n = sessions.length;

  async function dispatchAll(probe: Probe, testCase: Case, bound: boolean): Promise<void> {
    const dispatcher = testCase.create(runtime, creator!);
    try {
      await forEachSession(runtime, sessions, testCase.name, async (session, index, rng) => {
        if (testCase.hopFirst) await hop(rng);
        const schedule = (callback: Callback) => dispatcher.schedule(index, callback);
        await callbackRoundTrip(probe, session, rng, testCase.name, schedule, bound ? runtime.bind : undefined);
      });
    } finally {
      dispatcher.close();
    }
  }

  for (const testCase of CASES) {
    it(`${testCase.name}: with bind() every callback sees its own session`, async () => {
      const probe = new Probe(runtime);
      await dispatchAll(probe, testCase, true);
      await expectIsolation(probe, { reads: 3 * n, spans: 3 * n });
    });

    it(`pitfall: ${testCase.name}: without bind() callbacks see the wrong session`, async () => {
      const probe = new Probe(runtime);
      await dispatchAll(probe, testCase, false);
      await expectLeak(probe, { reads: 3 * n, realMismatches: testCase.realLeaks(n) });
    });
  }
});
