// Integration tests of the distributed mode with threadline/testing: two test gateways on one Redis.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DeliveryReceiver, startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
let receiver: DeliveryReceiver;
let accepting: TestGateway;
let working: TestGateway;
beforeAll(async () => {
  receiver = await DeliveryReceiver.start();
  const shared = { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix(), THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url };
  // One instance only takes messages; the other runs every turn and sends every reply.
  accepting = await startTestGateway({ env: { ...shared, THREADLINE_WORKERS: 'none' } });
  working = await startTestGateway({ env: shared });
});
afterAll(async () => {
  await accepting.stop();
  await working.stop();
  await receiver.close();
});

it('a message taken by one instance is answered by another, in its thread, and its one trace is tagged throughout', async () => {
  const answer = await accepting.send({ chat_id: 'ops', thread_id: '42', text: 'hello' });
  const [reply] = await receiver.waitFor(1);
  expect(reply!.body).toMatchObject({ chat_id: 'ops', thread_id: '42', text: 'hello' });
  const traceId = answer.body['trace_id'] as string;
  const spans = await working.waitForSpans(traceId, ['gateway.message', 'gateway.turn', 'agent.turn', 'gateway.deliver']);
  const turn = spans.find((span) => span.name === 'gateway.turn')!;
  expect(turn.parentSpanContext?.spanId).toBe(spans.find((span) => span.name === 'gateway.message')!.spanContext().spanId);
  expect(await working.routingProblems(traceId, { chatId: 'ops', threadId: '42' })).toEqual([]);
});
