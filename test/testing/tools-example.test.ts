// docs/tools.md's example for testing tools with threadline/testing, kept running here.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ clock: 'manual', env: { THREADLINE_ADMINS: '*' } });
});
afterAll(() => gateway.stop());

it('a reminder arrives in its chat and thread once the manual clock reaches it; runTool sends as a turn would', async () => {
  await gateway.send({ chat_id: 'ops', thread_id: '42', text: '/remind 10m stand up' });
  await gateway.receiver.waitFor(1); // the acknowledgement: the reminder is stored
  await gateway.advanceTime(10 * 60_000);
  const [, reminder] = await gateway.receiver.waitFor(2);
  expect(reminder!.body).toMatchObject({ kind: 'cron', chat_id: 'ops', thread_id: '42' });
  expect(reminder!.body.text).toContain('stand up');
  const sent = await gateway.runTool('send_message', { target: 'webhook:other', text: 'hi' }, { platform: 'webhook', chatType: 'dm', chatId: 'ops' });
  expect(sent.text).toBe('Sent to webhook:other.');
  const [, , delivery] = await gateway.receiver.waitFor(3);
  expect(delivery!.body).toMatchObject({ kind: 'send', chat_id: 'other', thread_id: null, text: 'hi' });
});

it('refuses the manual clock with THREADLINE_REDIS_URL, where BullMQ times reminders and cron runs by the wall clock', async () => {
  // Refused before anything starts: the URL is never dialled.
  const error = assertThreadlineError(await rejectionOf(startTestGateway({ clock: 'manual', env: { THREADLINE_REDIS_URL: 'redis://127.0.0.1:1' } })), 'TL_CONFIG_INVALID');
  expect(error.message).toContain('THREADLINE_REDIS_URL');
});
