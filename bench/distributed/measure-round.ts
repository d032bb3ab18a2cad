/**
 * One set-up at a fixed offered load: the CPU its gateway processes (together) and its
 * redis-server spent over a window of messages, per message, and the time from each window
 * message's 202 to its reply. The round ends when every accepted message's reply arrived, so
 * a set-up that falls behind cannot leave its backlog to the next one.
 */
import { quantile } from '../harness.js';
import { cpuTime } from '../gateway/cpu-time.js';
import { messageBody } from '../gateway/fixed-load.js';
import type { Configuration } from './configurations.js';
import { replyLatencies } from './reply-latency.js';
import type { ReplySink } from './reply-sink-process.js';
import { offerSplitLoad } from './split-load.js';

/** As bench:gateway's messages: 200 chats, every other one with a thread, text `m<n>`. */
const CHATS = 200;

export interface Load {
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly windowSeconds: number;
}

export interface Round {
  /** CPU a message, ms: every gateway process of the set-up together (all their threads). */
  readonly gatewayMs: number;
  /** CPU a message of the set-up's redis-server, ms; 0 when embedded. */
  readonly redisMs: number;
  /** 202 to reply at the receiver, ms. */
  readonly replyP50Ms: number;
  readonly replyP99Ms: number;
  readonly refused: number;
  readonly failed: number;
  readonly messages: number;
}

/** CPU time so far, µs: the set-up's gateway processes together, and its redis-server. */
export interface SetUpCpu {
  readonly gatewaysUs: number;
  readonly redisUs: number;
}

/** Reads /proc for every process of the set-up. */
export function cpuOf(configuration: Pick<Configuration, 'gateways' | 'redis'>): SetUpCpu {
  return {
    gatewaysUs: configuration.gateways.reduce((sum, gateway) => sum + cpuTime(gateway.pid).totalUs, 0),
    redisUs: configuration.redis === undefined ? 0 : cpuTime(configuration.redis.pid).totalUs,
  };
}

const replyTimeoutMs = 120_000;
/** The echo agent answers with the message's own text. */
const replyTextOf = (n: number): string => (JSON.parse(messageBody(n)) as { text: string }).text;

export async function measureRound(configuration: Configuration, sink: ReplySink, load: Load): Promise<Round> {
  const snapshot = () => cpuOf(configuration);
  await sink.reset();
  const run = await offerSplitLoad({ urls: configuration.gateways.map((g) => g.url), ...load, body: messageBody, snapshot }, CHATS);
  await sink.awaitDeliveries(run.accepted, replyTimeoutMs);
  const latencies = replyLatencies(run.acceptedAtUs, run.firstWindowMessage, await sink.arrivals(), replyTextOf);
  if (latencies.missing > 0) throw new Error(`${configuration.name}: ${latencies.missing} accepted messages got no reply`);
  const messages = run.acceptedAtUs.length;
  const perMessageMs = (us: number) => us / 1000 / messages;
  return {
    gatewayMs: perMessageMs(run.after.gatewaysUs - run.before.gatewaysUs),
    redisMs: perMessageMs(run.after.redisUs - run.before.redisUs),
    replyP50Ms: latencies.sortedMs.length === 0 ? Number.NaN : quantile(Array.from(latencies.sortedMs), 0.5),
    replyP99Ms: latencies.sortedMs.length === 0 ? Number.NaN : quantile(Array.from(latencies.sortedMs), 0.99),
    refused: run.refused,
    failed: run.failed,
    messages,
  };
}
