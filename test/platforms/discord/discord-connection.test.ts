import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Intake } from '../../../src/platforms/platform.js';
import { DiscordPlatform } from '../../../src/platforms/discord/discord-platform.js';
import { DISCORD_INTENTS } from '../../../src/platforms/discord/discord-connection.js';
import { FakeDiscord } from '../../../src/testing/index.js';
import type { SyncTokens } from '../../../src/store/store.js';
import { until } from '../../helpers/gateway.js';

const TOKEN = 'discord-connection-token';

/** Sync tokens as a store keeps them: each advanced only from the value read. */
function memoryTokens(): SyncTokens {
  const tokens = new Map<string, string>();
  return {
    get: async (stream) => tokens.get(stream),
    advance: async (stream, previous, token) => {
      if (tokens.get(stream) !== previous) return false;
      tokens.set(stream, token);
      return true;
    },
  };
}
const fakes: FakeDiscord[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function started(
  existing?: FakeDiscord,
  syncTokens?: SyncTokens,
): Promise<{ fake: FakeDiscord; platform: DiscordPlatform; accepted: string[] }> {
  const fake = existing ?? (await FakeDiscord.start({ token: TOKEN }));
  if (existing === undefined) fakes.push(fake);
  const platform = new DiscordPlatform({ botToken: TOKEN, apiRoot: fake.apiRoot, logger: pino({ level: 'silent' }), syncTokens });
  const accepted: string[] = [];
  const intake: Intake = {
    accept: async (message) => {
      accepted.push(message.text);
      return { messageId: message.session.messageId!, sessionId: 's', traceId: '0'.repeat(32) };
    },
  };
  platform.start(intake);
  return { fake, platform, accepted };
}

describe('the Discord Gateway connection', () => {
  it('identifies with the message intents, and only the Gateway URL GET /gateway/bot named', async () => {
    const { fake, platform } = await started();
    await fake.connected();
    expect(fake.gatewayStats.identifies).toEqual([{ intents: DISCORD_INTENTS }]);
    expect(DISCORD_INTENTS).toBe((1 << 9) | (1 << 12) | (1 << 15));
    expect(fake.calls.map((call) => call.route)).toContain('GET /gateway/bot');
    await platform.close();
  });

  it('closes at once when stopped just as the bot connected (the library would reconnect and hang its destroy)', async () => {
    const { fake, platform } = await started();
    // Stopped as soon as the fake sent READY: the client is still waiting for it.
    await fake.connected();
    const stopping = Date.now();
    await platform.close();
    expect(Date.now() - stopping).toBeLessThan(2_000);
    await fake.gateway.until(() => fake.gateway.connected === 0);
  });

  it('takes each message once, in order, and lets every message received be taken before close resolves', async () => {
    const { fake, platform, accepted } = await started();
    await fake.connected();
    for (let i = 0; i < 20; i++) fake.userMessage({ channelId: '1200000000000000001', content: `m${i}` });
    await until(() => accepted.length === 20);
    expect(accepted).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    await platform.close();
  });

  it('resumes after a restart the session it kept, so what was written meanwhile is taken, and nothing twice', async () => {
    const handover = memoryTokens();
    const first = await started(undefined, handover);
    const { fake } = first;
    await fake.connected();
    for (let i = 0; i < 3; i++) fake.userMessage({ channelId: '1200000000000000002', content: `before ${i}` });
    await until(() => first.accepted.length === 3);
    await first.platform.close();
    // The bot is away: Discord keeps these for the session.
    for (let i = 0; i < 3; i++) fake.userMessage({ channelId: '1200000000000000002', content: `while away ${i}` });
    const second = await started(fake, handover);
    await until(() => second.accepted.length === 3);
    expect(second.accepted).toEqual(['while away 0', 'while away 1', 'while away 2']);
    expect(fake.gatewayStats.identifies).toHaveLength(1);
    expect(fake.gatewayStats.resumes).toHaveLength(1);
    fake.userMessage({ channelId: '1200000000000000002', content: 'after' });
    await until(() => second.accepted.length === 4);
    await second.platform.close();
  });

  it('identifies afresh when the session it kept is gone', async () => {
    const handover = memoryTokens();
    const first = await started(undefined, handover);
    const { fake } = first;
    await fake.connected();
    fake.userMessage({ channelId: '1200000000000000003', content: 'one' });
    await until(() => first.accepted.length === 1);
    await first.platform.close();
    fake.gateway.invalidateSessions();
    const second = await started(fake, handover);
    await fake.connected(1);
    fake.userMessage({ channelId: '1200000000000000003', content: 'two' });
    await until(() => second.accepted.length === 1);
    expect(second.accepted).toEqual(['two']);
    expect(fake.gatewayStats.identifies).toHaveLength(2);
    await second.platform.close();
  });

  it("resumes only on the Gateway's own site: a kept session naming another host is not resumed (the token would go there)", async () => {
    const handover = memoryTokens();
    await handover.advance(
      'discord-gateway',
      undefined,
      JSON.stringify({ botId: '1000000000000000001', sessions: [{ sessionId: 'x', resumeURL: 'wss://evil.example', sequence: 1, shardId: 0, shardCount: 1 }] }),
    );
    const { fake, platform } = await started(undefined, handover);
    await fake.connected();
    expect(fake.gatewayStats.identifies).toHaveLength(1);
    expect(fake.gatewayStats.resumes).toEqual([]);
    await platform.close();
  });
});
