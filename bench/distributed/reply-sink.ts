/**
 * The far end of the distributed bench, in a process of its own: a delivery receiver on
 * loopback that notes when each reply first arrived (CLOCK_MONOTONIC µs, the clock the bench
 * process reads too), keyed by the reply's text, which the echo agent copies from its message.
 * The notes are cleared at every reset, so they hold one round's replies at most.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SinkReply, SinkRequest } from './reply-sink-process.js';

const arrivals = new Map<string, number>();
let deliveries = 0;
let unreadable = 0;

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const atUs = Number(process.hrtime.bigint() / 1000n);
    deliveries++;
    try {
      const { text } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { text?: unknown };
      // A redelivery (same text) keeps the first arrival: that is when the user saw the reply.
      if (typeof text === 'string' && !arrivals.has(text)) arrivals.set(text, atUs);
      else if (typeof text !== 'string') unreadable++;
    } catch {
      unreadable++;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));

process.on('message', (message: SinkRequest) => {
  if (message.op === 'reset') {
    arrivals.clear();
    deliveries = 0;
    unreadable = 0;
  }
  const reply: SinkReply = { deliveries, replies: arrivals.size, unreadable, ...(message.op === 'arrivals' ? { arrivals: [...arrivals] } : {}) };
  process.send!(reply);
});
process.on('disconnect', () => process.exit(0));
