// worker_threads: the session crosses postMessage only through inject/extract (pitfall: Context lost across threads).
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { runDetached, type Carrier } from '../../../src/session/index.js';
import type { WorkerReply, WorkerRequest } from './fixtures/worker.js';
import { SESSIONS, Probe, expectIsolation, forEachSession, hop, makeSessions } from './harness.js';
import { runtimes, type SessionRuntime } from './runtime.js';

const WORKERS = 4;

/** A few workers, started outside any session, answering requests by index. */
class WorkerPool {
  private readonly pending = new Map<number, (reply: WorkerReply) => void>();

  private constructor(private readonly workers: readonly Worker[]) {
    for (const worker of workers) {
      worker.on('message', (reply: WorkerReply) => {
        this.pending.get(reply.index)?.(reply);
        this.pending.delete(reply.index);
      });
    }
  }

  static async start(size: number): Promise<WorkerPool> {
    const workers = runDetached(() =>
      Array.from(
        { length: size },
        () =>
          new Worker(new URL('./fixtures/worker.ts', import.meta.url), {
            execArgv: ['--import', new URL('./fixtures/register-tsx.mjs', import.meta.url).href],
          }),
      ),
    );
    // Each says 'ready' once its imports have loaded and its context manager is installed.
    await Promise.all(workers.map((worker) => once(worker, 'message')));
    return new WorkerPool(workers);
  }

  ask(runtime: SessionRuntime, index: number, carrier: Carrier): Promise<WorkerReply> {
    const request: WorkerRequest = { runtime: runtime.name, index, carrier };
    return new Promise((resolve) => {
      this.pending.set(index, resolve);
      this.workers[index % this.workers.length]!.postMessage(request);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}

// One pool for both runtimes: starting TypeScript workers is the slow part.
let pool: WorkerPool;
beforeAll(async () => {
  pool = await WorkerPool.start(WORKERS);
});
afterAll(async () => {
  await pool.close();
});

describe.each(runtimes)('worker_threads: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'w');
  const n = sessions.length;

  it('a worker reads the session injected into each message, before and after a hop, and none outside it', async () => {
    const probe = new Probe(runtime);
    await forEachSession(runtime, sessions, 'workers', async (session, index, rng) => {
      await hop(rng);
      const reply = await pool.ask(runtime, index, runtime.inject());
      probe.read(session, 'after the worker replied');
      probe.compare(undefined, reply.outside ?? undefined, 'worker, before extract');
      probe.compare(session, reply.inside ?? undefined, 'worker, inside extract');
      probe.compare(session, reply.afterHop ?? undefined, 'worker, after a hop inside extract');
    });
    await expectIsolation(probe, { reads: n * 4, spans: n });
  });
});
