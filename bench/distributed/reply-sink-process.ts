/** The bench's handle on bench/distributed/reply-sink.ts, the timing delivery receiver in a process of its own. */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { root } from '../gateway/servers.js';

/** What the bench asks the sink over IPC; one question at a time. */
export interface SinkRequest {
  readonly op: 'reset' | 'count' | 'arrivals';
}

export interface SinkReply {
  /** Deliveries received since the last reset, redeliveries included. */
  readonly deliveries: number;
  /** Distinct replies (texts) since the last reset. */
  readonly replies: number;
  /** Deliveries whose body held no text: a bench or gateway fault, reported, never ignored. */
  readonly unreadable: number;
  /** [reply text, first arrival in CLOCK_MONOTONIC µs]; only when asked for 'arrivals'. */
  readonly arrivals?: readonly (readonly [string, number])[];
}

export interface ReplySink {
  readonly url: string;
  reset(): Promise<void>;
  /** Resolves once `count` distinct replies arrived since the last reset; rejects after `timeoutMs`. */
  awaitDeliveries(count: number, timeoutMs: number): Promise<void>;
  /** First arrival of each reply since the last reset, by its text. */
  arrivals(): Promise<ReadonlyMap<string, number>>;
  stop(): void;
}

export async function startReplySink(): Promise<ReplySink> {
  const child: ChildProcess = fork(join(root, 'bench/distributed/reply-sink.ts'), { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const ask = (op: SinkRequest['op']) =>
    new Promise<SinkReply>((resolve) => {
      child.once('message', (reply: SinkReply) => resolve(reply));
      child.send({ op } satisfies SinkRequest);
    });
  return {
    url: `http://127.0.0.1:${port}`,
    reset: async () => {
      await ask('reset');
    },
    awaitDeliveries: async (count, timeoutMs) => {
      const started = performance.now();
      for (;;) {
        const { replies, unreadable } = await ask('count');
        if (unreadable > 0) throw new Error(`${unreadable} deliveries had no text: is the gateway's agent still the echo?`);
        if (replies >= count) return;
        if (performance.now() - started > timeoutMs) throw new Error(`only ${replies} of ${count} replies arrived within ${timeoutMs / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    arrivals: async () => new Map((await ask('arrivals')).arrivals),
    stop: () => child.kill(),
  };
}
