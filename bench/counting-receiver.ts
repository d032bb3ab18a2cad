import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingReceiver {
  readonly server: Server;
  readonly port: number;
  /** Deliveries answered since the start or the last reset. */
  readonly count: () => number;
  readonly reset: () => void;
}

/** The far end of the webhook for benches: answers 200 on 127.0.0.1, counts, keeps nothing. */
export async function startCountingReceiver(): Promise<CountingReceiver> {
  let count = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      count++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, count: () => count, reset: () => (count = 0) };
}
