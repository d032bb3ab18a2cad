import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, startTestGateway, type FakeChatRequest, type TestGateway } from '../../../src/testing/index.js';
import { until } from '../../helpers/gateway.js';

const GROUP = -100555;
let model: FakeOpenAI | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  await model?.close();
  gateway = model = undefined;
});

/** A model that asks for a command at every turn, and says done once it ran (or was held). */
const runsEcho = ({ body }: FakeChatRequest) =>
  (body.messages.at(-1) as { role: string }).role === 'tool' ? FakeOpenAI.text('done') : FakeOpenAI.toolCalls([{ name: 'terminal', arguments: { command: 'echo ran-$((6*7))' } }]);

let updateId = 1;
const message = (userId: number, text: string) => ({
  update_id: updateId++,
  message: { message_id: updateId, date: 0, chat: { id: GROUP, type: 'supergroup', title: 'team' }, from: { id: userId, is_bot: false, first_name: `u${userId}` }, text },
});

describe('a held call on a platform with buttons', () => {
  it("carries a button that posts /confirm as its presser: a non-admin's press is refused, an admin's runs the call once", async () => {
    model = await FakeOpenAI.start(runsEcho);
    gateway = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: { THREADLINE_ADMINS: 'telegram:1', THREADLINE_TERMINAL: '1' } });
    const telegram = gateway.telegram!;
    await gateway.sendTelegram(message(2, 'assistant: run echo'));
    await until(() => telegram.sent.length === 1, 10_000);
    await gateway.sendTelegram(message(1, 'hi all'));
    // bob's answer, then the notice and the admin's answer.
    await until(() => telegram.sent.length === 3, 10_000);
    const notice = telegram.sent.find((sent) => sent.button !== undefined)!;
    expect(notice.text).toContain('It was not run');
    expect(notice.button!.data).toMatch(/^\/confirm [a-z0-9]{6}$/);
    expect(Buffer.byteLength(notice.button!.data)).toBeLessThanOrEqual(64);

    const before = telegram.sent.length;
    await gateway.sendTelegram(telegram.buttonPress(notice.messageId, { id: 2 }));
    await until(() => telegram.sent.length === before + 1, 10_000);
    expect(telegram.sent.at(-1)!.text).toContain('/confirm is for admins');

    const press = telegram.buttonPress(notice.messageId, { id: 1 });
    await gateway.sendTelegram(press);
    await until(() => telegram.sent.length === before + 2, 10_000);
    expect(telegram.sent.at(-1)!.text).toContain('ran-42');
    expect(telegram.sent.at(-1)!.text).toContain('confirmed by telegram:1');
    // Telegram redelivers the same update: taken once.
    await gateway.sendTelegram(press);
    await until(() => telegram.answeredPresses.length === 3, 10_000);
    expect(telegram.answeredPresses.filter((id) => id === press.callback_query!.id)).toHaveLength(2);
    expect(telegram.sent.filter((sent) => sent.text.includes('ran-42'))).toHaveLength(1);
  });
});

describe('a held call on Slack', () => {
  it('carries a button whose press, signed by Slack, posts /confirm as the presser in the thread', async () => {
    model = await FakeOpenAI.start(runsEcho);
    gateway = await startTestGateway({ slack: true, llmBaseUrl: model.baseUrl, env: { THREADLINE_ADMINS: 'slack:UBOSS', THREADLINE_TERMINAL: '1' } });
    const slack = gateway.slack!;
    const event = (user: string, ts: string, text: string) => ({
      type: 'event_callback',
      event: { type: 'message', channel: 'C1', channel_type: 'channel', user, ts, thread_ts: '100.000001', text },
    });
    await gateway.sendSlack(event('UBOB', '100.000002', 'assistant: run echo'));
    await until(() => slack.sent.length === 1, 10_000);
    await gateway.sendSlack(event('UBOSS', '100.000003', 'hi all'));
    await until(() => slack.sent.length === 3, 10_000);
    const notice = slack.sent.find((sent) => sent.button !== undefined)!;
    expect(notice).toMatchObject({ channel: 'C1', threadTs: '100.000001' });
    expect(notice.button!.value).toMatch(/^\/confirm [a-z0-9]{6}$/);

    const refused = await gateway.sendSlackInteraction(slack.buttonPress(notice.ts!, 'UBOB'));
    expect(refused.status).toBe(200);
    await until(() => slack.sent.length === 4, 10_000);
    expect(slack.sent.at(-1)!.text).toContain('/confirm is for admins');

    // Unsigned, the press is refused and runs nothing.
    expect((await gateway.sendSlackInteraction(slack.buttonPress(notice.ts!, 'UBOSS'), 'wrong-secret')).status).toBe(401);
    await gateway.sendSlackInteraction(slack.buttonPress(notice.ts!, 'UBOSS'));
    await until(() => slack.sent.length === 5, 10_000);
    expect(slack.sent.at(-1)).toMatchObject({ channel: 'C1', threadTs: '100.000001' });
    expect(slack.sent.at(-1)!.text).toContain('ran-42');
  });
});
