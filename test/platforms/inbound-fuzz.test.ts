import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { displayName } from '../../src/platforms/display-name.js';
import { discordInbound, takenMessage } from '../../src/platforms/discord/discord-inbound.js';
import { slackInbound } from '../../src/platforms/slack/slack-inbound.js';
import { telegramInbound } from '../../src/platforms/telegram/telegram-inbound.js';
import type { InboundMessage } from '../../src/platforms/platform.js';
import { createSession } from '../../src/session/index.js';

/** A parse result is either nothing or a session that validates or fails with a typed error. */
function checkParsed(message: InboundMessage | undefined): void {
  if (message === undefined) return;
  expect(typeof message.text).toBe('string');
  try {
    createSession(message.session);
  } catch (error) {
    expect(error).toBeInstanceOf(ThreadlineError);
  }
}

const telegramLike = fc.record({
  update_id: fc.anything(),
  message: fc.oneof(
    fc.anything(),
    fc.record(
      {
        message_id: fc.oneof(fc.integer(), fc.string()),
        text: fc.oneof(fc.string({ unit: 'grapheme' }), fc.anything()),
        chat: fc.record({ id: fc.oneof(fc.integer(), fc.string(), fc.anything()), type: fc.constantFrom('private', 'group', 'supergroup', 'channel', 'x'), title: fc.string({ unit: 'binary' }) }, { requiredKeys: [] }),
        from: fc.record({ id: fc.anything(), first_name: fc.string({ unit: 'binary', maxLength: 400 }), username: fc.anything() }, { requiredKeys: [] }),
        message_thread_id: fc.anything(),
        is_topic_message: fc.anything(),
      },
      { requiredKeys: [] },
    ),
  ),
}, { requiredKeys: [] });

describe('inbound parsing of untrusted platform payloads', () => {
  it('telegramInbound never throws and yields valid or typed-invalid sessions', () => {
    fc.assert(fc.property(fc.oneof(fc.anything(), telegramLike), (update) => checkParsed(telegramInbound(update as never))), { numRuns: 2000 });
  });

  it('slackInbound never throws and yields valid or typed-invalid sessions', () => {
    const slackLike = fc.record(
      {
        type: fc.constantFrom('message', 'app_mention', 'reaction_added'),
        channel: fc.oneof(fc.string({ unit: 'binary' }), fc.anything()),
        channel_type: fc.oneof(fc.constantFrom('im', 'mpim', 'group', 'channel'), fc.anything()),
        ts: fc.oneof(fc.string(), fc.anything()),
        thread_ts: fc.oneof(fc.string({ unit: 'binary' }), fc.anything()),
        user: fc.anything(),
        text: fc.oneof(fc.string({ unit: 'grapheme' }), fc.anything()),
        subtype: fc.anything(),
      },
      { requiredKeys: ['type'] },
    );
    fc.assert(
      fc.property(fc.oneof(fc.anything(), slackLike), fc.boolean(), (event, top) => checkParsed(slackInbound(event, top))),
      { numRuns: 2000 },
    );
  });

  it('discord takenMessage and discordInbound never throw and yield valid or typed-invalid sessions', () => {
    const bot = '900000000000000001';
    const snowflake = fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String);
    const discordLike = fc.record(
      {
        id: fc.oneof(snowflake, fc.anything()),
        channel_id: fc.oneof(snowflake, fc.string({ unit: 'binary' }), fc.anything()),
        guild_id: fc.oneof(snowflake, fc.anything()),
        type: fc.oneof(fc.constantFrom(0, 19, 6, 21), fc.anything()),
        content: fc.oneof(fc.string({ unit: 'grapheme' }).map((text) => `<@${bot}> ${text}`), fc.anything()),
        author: fc.record({ id: fc.oneof(snowflake, fc.anything()), username: fc.string({ unit: 'binary', maxLength: 400 }), global_name: fc.anything(), bot: fc.anything() }, { requiredKeys: [] }),
        mentions: fc.oneof(fc.constant([{ id: bot }]), fc.anything()),
        webhook_id: fc.anything(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(fc.anything(), discordLike), fc.option(snowflake, { nil: undefined }), (data, parent) => {
        const taken = takenMessage(data, bot);
        if (taken !== undefined) checkParsed(discordInbound(taken, parent));
      }),
      { numRuns: 2000 },
    );
  });

  it('displayName keeps names within the limits a session accepts', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 600 }), (name) => {
        const cleaned = displayName(name);
        if (cleaned !== undefined) expect(() => createSession({ platform: 'x', chatType: 'dm', chatId: '1', chatName: cleaned })).not.toThrow();
      }),
      { numRuns: 3000 },
    );
  });
});
