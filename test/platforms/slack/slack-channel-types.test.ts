import Fastify from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Intake } from '../../../src/platforms/platform.js';
import { SLACK_EVENTS_PATH, SlackPlatform } from '../../../src/platforms/slack/slack-platform.js';
import { slackSignature } from '../../../src/platforms/slack/slack-signature.js';

const SECRET = 'signing-secret';
let app: ReturnType<typeof Fastify> | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A Slack route whose intake records the chat type each accepted event was given. */
async function slackRoute() {
  const typeOf = new Map<string, string>();
  const intake: Intake = {
    accept: async (message) => {
      typeOf.set(message.session.messageId!, message.session.chatType);
      return { messageId: 'm', sessionId: 's', traceId: '0'.repeat(32) };
    },
  };
  app = Fastify();
  new SlackPlatform({ botToken: 'xoxb-test', signingSecret: SECRET, apiUrl: 'http://127.0.0.1:9/api/', threadTopLevel: false, logger: pino({ level: 'silent' }) }).register(
    app,
    intake,
  );
  await app.ready();
  let ts = 0;
  const send = async (event: Record<string, unknown>): Promise<string> => {
    const messageTs = `1800000000.${String(++ts).padStart(6, '0')}`;
    const body = JSON.stringify({ type: 'event_callback', event: { ts: messageTs, text: 'hi', user: 'U1', ...event } });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const answer = await app!.inject({
      method: 'POST',
      url: SLACK_EVENTS_PATH,
      headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': timestamp, 'x-slack-signature': slackSignature(SECRET, timestamp, body) },
      payload: body,
    });
    expect(answer.statusCode).toBe(200);
    return typeOf.get(messageTs)!;
  };
  return { send };
}

describe('Slack channel types', () => {
  it("gives an app_mention the chat type its channel's message events showed", async () => {
    const { send } = await slackRoute();
    expect(await send({ type: 'message', channel: 'C1', channel_type: 'group' })).toBe('group');
    expect(await send({ type: 'app_mention', channel: 'C1' })).toBe('group');
    expect(await send({ type: 'app_mention', channel: 'C2' })).toBe('channel');
  });
});
