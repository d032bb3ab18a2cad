/**
 * The far end of the gateway benchmark, in a process of its own: a delivery receiver on
 * loopback that only counts. Reports its port and its count over IPC.
 */
import { startCountingReceiver } from '../counting-receiver.js';

const receiver = await startCountingReceiver();
process.send!({ port: receiver.port });
process.on('message', (message: { reset?: boolean }) => {
  if (message.reset === true) receiver.reset();
  process.send!({ deliveries: receiver.count() });
});
process.on('disconnect', () => process.exit(0));
