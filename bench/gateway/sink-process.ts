/** The bench's handle on bench/gateway/sink.ts, the delivery receiver in a process of its own. */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { root } from './servers.js';

export interface Sink {
  readonly url: string;
  readonly child: ChildProcess;
  /** Deliveries received since the last reset. */
  deliveries(): Promise<number>;
  reset(): Promise<void>;
  /** Resolves once `count` deliveries arrived since the last reset; rejects after `timeoutMs`. */
  awaitDeliveries(count: number, timeoutMs: number): Promise<void>;
  stop(): void;
}

export async function startSink(): Promise<Sink> {
  const child = fork(join(root, 'bench/gateway/sink.ts'), { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const ask = (reset: boolean) =>
    new Promise<number>((resolve) => {
      child.once('message', (m: { deliveries: number }) => resolve(m.deliveries));
      child.send({ reset });
    });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    deliveries: () => ask(false),
    reset: async () => {
      await ask(true);
    },
    awaitDeliveries: async (count, timeoutMs) => {
      const started = performance.now();
      for (;;) {
        const deliveries = await ask(false);
        if (deliveries >= count) return;
        if (performance.now() - started > timeoutMs) throw new Error(`only ${deliveries} of ${count} deliveries arrived`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stop: () => child.kill(),
  };
}
