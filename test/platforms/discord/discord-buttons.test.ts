import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, type FakeChatRequest, type TestGateway } from '../../../src/testing/index.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

/** Buttons (a held call's /confirm) and interactions over the Gateway, through the fake. */
const startTestGateway = useTestGateways();
let model: FakeOpenAI | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const CHANNEL = '1950000000000000001';
const ADMIN = '1960000000000000001';
const BOB = '1960000000000000002';

/** A model that asks for a command at every turn, and says done once it ran (or was held). */
const runsEcho = ({ body }: FakeChatRequest) =>
  (body.messages.at(-1) as { role: string }).role === 'tool' ? FakeOpenAI.text('done') : FakeOpenAI.toolCalls([{ name: 'terminal', arguments: { command: 'echo ran-$((6*7))' } }]);

/** Bob asks for a command, then the admin writes: the admin's turn holds the call, with a /confirm button. */
async function heldCall(env: Record<string, string> = {}): Promise<{ g: TestGateway; noticeId: string }> {
  model = await FakeOpenAI.start(runsEcho);
  const g = await startTestGateway({ discord: true, llmBaseUrl: model.baseUrl, env: { THREADLINE_ADMINS: `discord:${ADMIN}`, THREADLINE_TERMINAL: '1', ...env } });
  const fake = g.discord!;
  fake.userMessage({ channelId: CHANNEL, authorId: BOB, content: 'assistant: run echo' });
  await until(() => fake.sent.length === 1);
  fake.userMessage({ channelId: CHANNEL, authorId: ADMIN, content: 'hi all' });
  await until(() => fake.sent.length === 3);
  const notice = fake.sent.find((sent) => sent.button !== undefined)!;
  expect(notice.content).toContain('It was not run');
  expect(notice.button!.command).toMatch(/^\/confirm [a-z0-9]{6}$/);
  return { g, noticeId: notice.id };
}

describe('Discord buttons', () => {
  it("carry a held call's /confirm: a press, signed by Discord, posts it as the presser; a non-admin's is refused, an admin's runs it once", async () => {
    const { g, noticeId } = await heldCall();
    const fake = g.discord!;
    const refused = await g.sendDiscordInteraction(fake.buttonPress(noticeId, BOB));
    // Acknowledged without a change to the message: the answer comes as a message of its own.
    expect(refused).toMatchObject({ status: 200, body: { type: 6 } });
    await until(() => fake.sent.length === 4);
    expect(fake.sent.at(-1)!.content).toContain('/confirm is for admins');

    const press = fake.buttonPress(noticeId, ADMIN);
    expect((await g.sendDiscordInteraction(press, { forged: true })).status).toBe(401);
    await g.sendDiscordInteraction(press);
    await until(() => fake.sent.length === 5);
    expect(fake.sent.at(-1)).toMatchObject({ channelId: CHANNEL });
    expect(fake.sent.at(-1)!.content).toContain('ran-42');
    expect(fake.sent.at(-1)!.content).toContain(`confirmed by discord:${ADMIN}`);
    // The same interaction again: taken once.
    await g.sendDiscordInteraction(press);
    await until(async () => (await g.deliveries()).every((delivery) => delivery.status === 'done'));
    expect(fake.sent.filter((sent) => sent.content.includes('ran-42'))).toHaveLength(1);
  });

  it('take a press over the Gateway when no Interactions Endpoint URL is set, and answer it through its callback', async () => {
    const { g, noticeId } = await heldCall({ THREADLINE_DISCORD_PUBLIC_KEY: '' });
    const fake = g.discord!;
    const press = fake.buttonPress(noticeId, ADMIN) as { id: string };
    fake.dispatchInteraction(press);
    await until(() => fake.sent.some((sent) => sent.content.includes('ran-42')));
    await until(() => fake.interactionAnswers.length === 1);
    expect(fake.interactionAnswers).toEqual([{ interactionId: press.id, type: 6, content: undefined, ephemeral: false }]);
  });
});

describe('Discord slash commands over the Gateway', () => {
  it('are taken and answered through the callback, with the text quoted', async () => {
    const g = await startTestGateway({ discord: true, env: { THREADLINE_DISCORD_PUBLIC_KEY: '' } });
    const fake = g.discord!;
    const command = fake.slashCommand({ channelId: CHANNEL, name: 'ask', options: { text: 'over the gateway' } }) as { id: string };
    fake.dispatchInteraction(command);
    await until(() => fake.sent.length === 1 && fake.interactionAnswers.length === 1);
    expect(fake.sent[0]).toMatchObject({ channelId: CHANNEL, content: 'over the gateway' });
    expect(fake.interactionAnswers).toEqual([{ interactionId: command.id, type: 4, content: '> over the gateway', ephemeral: false }]);
  });
});
