import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/agent/agent.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

/** Slash commands through Discord's HTTP interactions, signed as Discord signs them. */
const startTestGateway = useTestGateways();

const channel = (i: number) => String(1_900_000_000_000_000_000n + BigInt(i));
const thread = (i: number) => String(1_910_000_000_000_000_000n + BigInt(i));

describe('Discord slash commands', () => {
  it('answers PING with PONG, as Discord checks the endpoint', async () => {
    const g = await startTestGateway({ discord: true });
    expect(await g.sendDiscordInteraction({ type: 1, id: '1', application_id: '1' })).toMatchObject({ status: 200, body: { type: 1 } });
  });

  it('takes /ask in a thread as a message of its channel and thread, quotes it at once, and answers in the thread', async () => {
    const g = await startTestGateway({ discord: true });
    const fake = g.discord!;
    fake.addThread(thread(1), channel(1));
    const answer = await g.sendDiscordInteraction(fake.slashCommand({ channelId: thread(1), name: 'ask', options: { text: 'what is up' } }));
    expect(answer).toMatchObject({ status: 200, body: { type: 4, data: { content: '> what is up' } } });
    await until(() => fake.sent.length === 1);
    expect(fake.sent[0]).toMatchObject({ channelId: thread(1), content: 'what is up', replyTo: undefined });
    const [delivery] = await g.deliveries();
    expect(delivery!.destination).toEqual({ platform: 'discord', chatId: channel(1), threadId: thread(1) });
  });

  it("passes any other command on as its text, so the gateway's own commands answer", async () => {
    const g = await startTestGateway({ discord: true });
    await g.sendDiscordInteraction(g.discord!.slashCommand({ channelId: channel(2), name: 'stop' }));
    await until(() => g.discord!.sent.length === 1);
    expect(g.discord!.sent[0]!.content).toMatch(/^Stopped/);
  });

  it('refuses a forged signature, a stale timestamp and a body that is not JSON', async () => {
    const g = await startTestGateway({ discord: true });
    const command = g.discord!.slashCommand({ channelId: channel(3), name: 'ask', options: { text: 'x' } });
    expect((await g.sendDiscordInteraction(command, { forged: true })).status).toBe(401);
    expect((await g.sendDiscordInteraction(command, { timestamp: Math.floor(Date.now() / 1000) - 301 })).status).toBe(401);
    const unsigned = await fetch(`${g.url}/v1/discord/interactions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(command) });
    expect(unsigned.status).toBe(401);
    const notJson = g.discord!.signInteraction('not json');
    expect((await fetch(`${g.url}/v1/discord/interactions`, { method: 'POST', headers: notJson.headers, body: notJson.body })).status).toBe(400);
    expect(g.discord!.sent).toEqual([]);
  });

  it('runs an interaction Discord sends twice once', async () => {
    const g = await startTestGateway({ discord: true });
    const command = g.discord!.slashCommand({ channelId: channel(4), name: 'ask', options: { text: 'once' } });
    for (let i = 0; i < 3; i++) expect((await g.sendDiscordInteraction(command)).status).toBe(200);
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(g.discord!.sent.map((sent) => sent.content)).toEqual(['once']);
  });

  it('tells only its user when the gateway cannot take the command now', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const agent: Agent = {
      handle: async (turn) => {
        if (turn.text === 'hold') await gate;
        await turn.reply(turn.text);
      },
    };
    const g = await startTestGateway({ discord: true, agent, env: { THREADLINE_QUEUE_CAPACITY: '1', THREADLINE_CONCURRENCY: '1' } });
    await g.send({ chat_id: 'busy', text: 'hold' });
    const answer = await g.sendDiscordInteraction(g.discord!.slashCommand({ channelId: channel(5), name: 'ask', options: { text: 'later' } }));
    expect(answer).toMatchObject({ status: 200, body: { type: 4, data: { flags: 64 } } });
    expect(String((answer.body['data'] as { content: string }).content)).toMatch(/^Not taken: /);
    release();
  });
});
