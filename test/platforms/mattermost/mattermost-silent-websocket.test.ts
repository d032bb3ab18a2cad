import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MattermostPlatform } from '../../../src/platforms/mattermost/mattermost-platform.js';
import type { AcceptedMessage, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import { FakeMattermost } from '../../../src/testing/index.js';
import { until } from '../../helpers/gateway.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

describe('a mattermost websocket that goes silent', () => {
  it('is taken for dead after two unanswered pings, replaced, and what it missed caught up on', async () => {
    const fake = await FakeMattermost.start();
    closing.push(() => fake.close());
    const taken: InboundMessage[] = [];
    const intake: Intake = { accept: async (message): Promise<AcceptedMessage> => (taken.push(message), { messageId: 'm', sessionId: 's', traceId: '0'.repeat(32) }) };
    const platform = new MattermostPlatform({ url: fake.url, token: fake.token, threadTopLevel: false, catchUpMs: 60_000, logger: pino({ level: 'silent' }), pingIntervalMs: 100 });
    platform.start(intake);
    closing.push(() => platform.close());
    await fake.waitForConnections(1);
    const channelId = fake.addChannel();
    fake.freeze();
    // Written while the connection is dead without a word: no event reaches the bot.
    fake.userPost({ channelId, message: 'into the void' });
    await fake.waitForConnections(2, 5_000);
    await until(() => taken.length === 1, 5_000);
    expect(taken.map((message) => message.text)).toEqual(['into the void']);
  });
});
