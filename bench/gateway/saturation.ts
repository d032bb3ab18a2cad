/**
 * Saturation throughput, end to end: autocannon with 64 connections for a few seconds, then
 * messages accepted with 2xx divided by the time until the sink had received all their
 * deliveries. A reported figure only: on two shared cores it moves by a fifth between rounds.
 */
import autocannon from 'autocannon';
import type { Sink } from './sink-process.js';

export interface Saturation {
  readonly msgsPerSecond: number;
  readonly p99Ms: number;
  readonly refused: number;
}

const CONNECTIONS = 64;

export async function saturate(url: string, sink: Sink, seconds: number, body: (n: number) => string): Promise<Saturation> {
  await sink.reset();
  let counter = 0;
  const started = performance.now();
  const result = await autocannon({
    url: `${url}/v1/messages`,
    connections: CONNECTIONS,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (request) => ({ ...request, body: body(counter++) }) }],
  });
  const accepted = result['2xx'];
  await sink.awaitDeliveries(accepted, (seconds + 120) * 1000);
  const elapsed = (performance.now() - started) / 1000;
  return { msgsPerSecond: accepted / elapsed, p99Ms: result.latency.p99, refused: result.non2xx };
}
