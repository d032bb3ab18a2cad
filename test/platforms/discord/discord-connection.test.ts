import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Intake } from '../../../src/platforms/platform.js';
import { DiscordPlatform } from '../../../src/platforms/discord/discord-platform.js';
import { DISCORD_INTENTS } from '../../../src/platforms/discord/discord-connection.js';
import { FakeDiscord } from '../../../src/testing/index.js';
import { until } from '../../helpers/gateway.js';

const TOKEN = 'discord-connection-token';
const fakes: FakeDiscord[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function started(): Promise<{ fake: FakeDiscord; platform: DiscordPlatform; accepted: string[] }> {
  const fake = await FakeDiscord.start({ token: TOKEN });
  fakes.push(fake);
  const platform = new DiscordPlatform({ botToken: TOKEN, apiRoot: fake.apiRoot, logger: pino({ level: 'silent' }) });
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
});
