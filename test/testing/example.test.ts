// The README's example for users of threadline/testing, kept running here.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ telegram: true });
});
afterAll(() => gateway.stop());

it('answers in the same forum topic, and every span of the trace says so', async () => {
  const answer = await gateway.send({ chat_id: '-1001:ops', thread_id: '42', text: 'hello' });
  const [reply] = await gateway.receiver.waitFor(1);
  expect(reply!.body).toMatchObject({ chat_id: '-1001:ops', thread_id: '42', text: 'hello' });
  const traceId = answer.body['trace_id'] as string;
  expect(await gateway.routingProblems(traceId, { chatId: '-1001:ops', threadId: '42' })).toEqual([]);
});
