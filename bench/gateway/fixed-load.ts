/**
 * One server at a fixed offered load: its CPU time over a window of messages (after a
 * warm-up at the same rate, so the window sees a steady state), per message, and the
 * latencies of the window's messages. The round ends when every accepted message's reply
 * reached the sink, so a server that falls behind cannot leave its backlog to the next one.
 */
import { quantile } from '../harness.js';
import { cpuTime, type CpuTime } from './cpu-time.js';
import { offerLoad } from './paced-load.js';
import type { RunningServer } from './servers.js';
import type { Sink } from './sink-process.js';

const CHATS = 200;

/** Message n of a run: 200 chats, every other one with a thread. */
export function messageBody(n: number): string {
  const chat = n % CHATS;
  return JSON.stringify({ chat_id: `chat:${chat}`, ...(chat % 2 === 0 ? { thread_id: `t/${chat}` } : {}), text: `m${n}` });
}

export interface FixedLoad {
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly windowSeconds: number;
}

export interface FixedLoadRound {
  /** Server CPU a message, µs: the whole process, and its event loop (main thread) alone. */
  readonly cpuUs: number;
  readonly eventLoopUs: number;
  readonly p99Ms: number;
  readonly refused: number;
  readonly failed: number;
  /** Window messages; with the warm-up, every message of the round. */
  readonly messages: number;
  readonly allMessages: number;
  /** When the window opened and closed, process.hrtime in µs (CLOCK_MONOTONIC, as V8's profiles). */
  readonly windowUs: readonly [number, number];
}

interface Snapshot extends CpuTime {
  readonly atUs: number;
}

export async function measureAtFixedLoad(server: RunningServer, sink: Sink, load: FixedLoad): Promise<FixedLoadRound> {
  await sink.reset();
  const run = await offerLoad<Snapshot>({
    url: `${server.url}/v1/messages`,
    ...load,
    body: messageBody,
    snapshot: () => ({ ...cpuTime(server.pid), atUs: Number(process.hrtime.bigint() / 1000n) }),
  });
  await sink.awaitDeliveries(run.accepted, 120_000);
  const perMessage = (us: number) => us / run.windowMessages;
  return {
    cpuUs: perMessage(run.after.totalUs - run.before.totalUs),
    eventLoopUs: perMessage(run.after.mainUs - run.before.mainUs),
    p99Ms: quantile(Array.from(run.latenciesMs), 0.99),
    refused: run.refused,
    failed: run.failed,
    messages: run.windowMessages,
    allMessages: Math.round(load.rate * (load.warmupSeconds + load.windowSeconds)),
    windowUs: [run.before.atUs, run.after.atUs],
  };
}
