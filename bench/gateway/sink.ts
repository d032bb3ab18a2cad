/**
 * The far end of the gateway benchmark, in a process of its own: a delivery receiver on
 * loopback that only counts. Reports its port and its count over IPC.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let deliveries = 0;
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    deliveries++;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as AddressInfo).port });
});
process.on('message', (message: { reset?: boolean }) => {
  if (message.reset === true) deliveries = 0;
  process.send!({ deliveries });
});
process.on('disconnect', () => process.exit(0));
