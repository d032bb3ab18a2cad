import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, startTestGateway, type TestGateway } from '../../../src/testing/index.js';

const TOKEN = 'test-webhook-token-0123456789';
const BEARER = { authorization: `Bearer ${TOKEN}` };

let model: FakeOpenAI | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  await model?.close();
  gateway = model = undefined;
});

/** The names of the tools the model was offered in its first request of each turn. */
function offeredNames(fake: FakeOpenAI): string[][] {
  return fake.requests.map((request) => (request.body.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name).sort());
}

describe('the built-in tools a turn offers the model', () => {
  it('offers a stranger neither the terminal (off) nor any admin tool; an admin gets the admin tools, the terminal still off', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    // A webhook token: the caller is authenticated, so its user ids can name an admin.
    gateway = await startTestGateway({ llmBaseUrl: model.baseUrl, env: { THREADLINE_ADMINS: 'webhook:boss', THREADLINE_WEBHOOK_TOKEN: TOKEN } });
    await gateway.send({ chat_id: 'c', user_id: 'nobody', text: 'hi' }, BEARER);
    await gateway.receiver.waitFor(1);
    await gateway.send({ chat_id: 'c', user_id: 'boss', text: 'hi' }, BEARER);
    await gateway.receiver.waitFor(2);
    const [stranger, admin] = offeredNames(model);
    expect(stranger).toEqual(['list_schedules', 'remind', 'skills', 'tts']);
    expect(admin).toEqual(['list_schedules', 'remind', 'remove_schedule', 'schedule', 'send_message', 'skills', 'tts']);
  });
});
