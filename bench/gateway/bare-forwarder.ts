/**
 * The floor: a fastify route that answers 202 and makes one keep-alive POST to the delivery
 * receiver, with the same HTTP client as threadline's deliveries (undici's dispatcher, driven
 * by a handler of its own). No store, no queue, no telemetry; what any gateway here can at
 * best do.
 */
import Fastify from 'fastify';
import { Agent, type Dispatcher } from 'undici';

const target = new URL(process.env['DELIVERY_URL']!);
const dispatcher = new Agent({ connections: 256 });
const app = Fastify();

/** The answer is read and dropped; the floor does not even look at it. */
const ignoreAnswer: Dispatcher.DispatchHandlers = {
  onConnect: () => {},
  onHeaders: () => true,
  onData: () => true,
  onComplete: () => {},
  onError: () => {},
};

app.post<{ Body: { chat_id: string; thread_id?: string; text: string } }>('/v1/messages', async (req, reply) => {
  const body = JSON.stringify({ chat_id: req.body.chat_id, thread_id: req.body.thread_id ?? null, text: req.body.text, kind: 'reply' });
  dispatcher.dispatch({ origin: target.origin, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body }, ignoreAnswer);
  return reply.code(202).send({ ok: true });
});

const address = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening on ${address}`);
