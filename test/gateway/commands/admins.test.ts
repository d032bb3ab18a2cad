import { describe, expect, it } from 'vitest';
import type { Turn } from '../../../src/agent/agent.js';
import { Admins, type Sender } from '../../../src/gateway/commands/admins.js';
import { ConfigError } from '../../../src/errors.js';
import { readGatewayConfig } from '../../../src/gateway/gateway-config.js';
import { startGateway } from '../../../src/start/start-gateway.js';
import { createLogger } from '../../../src/telemetry/logger.js';
import { installTestTelemetry, type TestGateway, type TestGatewayOptions } from '../../../src/testing/index.js';
import { assertThreadlineError, rejectionOf, thrownBy } from '../../helpers/errors.js';
import { until, useTestGateways, webhookOrigin } from '../../helpers/gateway.js';
import { useTempDir } from '../../helpers/temp-dir.js';

const startTestGateway = useTestGateways();
const tempDir = useTempDir('admins');

const sender = (platform: string, userId: string | undefined, authenticated = true): Sender => ({ platform, userId, authenticated });

describe('THREADLINE_ADMINS', () => {
  it('names admins as platform:user_id, the id percent-encoded', () => {
    const admins = Admins.parse(' webhook:alice, slack:U123,telegram:42 ,webhook:a%3Ab,');
    for (const [platform, userId] of [['webhook', 'alice'], ['slack', 'U123'], ['telegram', '42'], ['webhook', 'a:b']] as const) {
      expect(admins.refusal(sender(platform, userId))).toBeUndefined();
    }
    expect(admins.refusal(sender('webhook', 'bob'))).toBe('not-listed');
    expect(admins.refusal(sender('slack', 'alice'))).toBe('not-listed');
    // "a:b" and "a" + "b" must not be confused: only the encoded form names a:b.
    expect(admins.refusal(sender('webhook', 'a'))).toBe('not-listed');
    expect(admins.refusal(sender('webhook', undefined))).toBe('no-user');
    expect(admins.refusal(sender('webhook', 'alice', false))).toBe('unauthenticated');
  });

  it('names a Matrix admin by the user id as Matrix spells it, or percent-encoded', () => {
    for (const entry of ['matrix:@ann:example.org', 'matrix:@ann%3Aexample.org', 'matrix:%40ann%3Aexample.org']) {
      const admins = Admins.parse(entry);
      expect(admins.refusal(sender('matrix', '@ann:example.org'))).toBeUndefined();
      expect(admins.refusal(sender('matrix', '@ann:example.com'))).toBe('not-listed');
      expect(admins.refusal(sender('matrix', '@bob:example.org'))).toBe('not-listed');
    }
    expect(Admins.parse('matrix:@ann:example.org:8448').refusal(sender('matrix', '@ann:example.org:8448'))).toBeUndefined();
    // Only Matrix ids, which start with '@', keep their ':' as they are.
    for (const value of ['slack:@ann:example.org', 'matrix:ann:example.org', 'matrix:@ann:']) {
      expect(thrownBy(() => Admins.parse(value))).toBeInstanceOf(ConfigError);
    }
  });

  it('* is everyone, even a sender no platform vouches for', () => {
    const admins = Admins.parse('*');
    expect(admins.refusal(sender('webhook', 'anyone', false))).toBeUndefined();
    expect(admins.refusal(sender('telegram', undefined))).toBeUndefined();
  });

  it('refuses * beside the terminal while the webhook takes callers without a token: a shell for any local process', () => {
    const error = thrownBy(() => readGatewayConfig({ THREADLINE_ADMINS: '*', THREADLINE_TERMINAL: '1' }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('THREADLINE_ADMINS');
    expect((error as ConfigError).message).toMatch(/THREADLINE_WEBHOOK_TOKEN/);
    expect(readGatewayConfig({ THREADLINE_ADMINS: '*', THREADLINE_TERMINAL: '1', THREADLINE_WEBHOOK_TOKEN: 'a-long-random-token' }).admins.holds('webhook:x')).toBe(true);
    expect(readGatewayConfig({ THREADLINE_ADMINS: 'webhook:alice', THREADLINE_TERMINAL: '1' }).admins.holds('webhook:alice')).toBe(true);
    expect(readGatewayConfig({ THREADLINE_ADMINS: '*' }).admins.holds('webhook:x')).toBe(true);
  });

  it('unset or empty is nobody', () => {
    for (const env of [{}, { THREADLINE_ADMINS: '' }, { THREADLINE_ADMINS: ' , ' }]) {
      expect(readGatewayConfig(env).admins.refusal(sender('telegram', '42'))).toBe('no-admins');
    }
  });

  it.each(['webhook', 'alice', ':alice', 'webhook:', 'webhook:a:b', 'Webhook:alice', 'slack: U1', 'webhook:%E0%A4%A', '*,webhook:alice'])(
    'refuses %j at start, naming the variable',
    (value) => {
      const error = thrownBy(() => readGatewayConfig({ THREADLINE_ADMINS: value }));
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe('THREADLINE_ADMINS');
    },
  );
});

/** What the admin tests need of one platform: send a message as a user, read the replies. */
interface Harness {
  readonly platform: string;
  readonly options: TestGatewayOptions;
  /** Extra configuration the platform needs for its user ids to count (the webhook token). */
  readonly env: Record<string, string>;
  /** Sends `text` from `userId` in `chat`; resolves with the message's trace id. */
  send(g: TestGateway, chat: number, userId: string, text: string): Promise<string>;
  chat(index: number): string;
  /** Admin entries for the users this harness sends as. */
  entry(userId: string): string;
  replies(g: TestGateway): { chatId: string; text: string }[];
}

const WEBHOOK_TOKEN = 'webhook-token';

const webhook: Harness = {
  platform: 'webhook',
  options: {},
  env: { THREADLINE_WEBHOOK_TOKEN: WEBHOOK_TOKEN },
  send: async (g, chat, userId, text) => {
    const answer = await g.send({ chat_id: webhook.chat(chat), user_id: userId, text }, { authorization: `Bearer ${WEBHOOK_TOKEN}` });
    expect(answer.status).toBe(202);
    return String(answer.body['trace_id']);
  },
  chat: (i) => `room:${i}`,
  entry: (userId) => `webhook:${encodeURIComponent(userId)}`,
  replies: (g) => g.receiver.received.map((d) => ({ chatId: d.body.chat_id, text: d.body.text })),
};

let telegramUpdate = 1;
const telegram: Harness = {
  platform: 'telegram',
  options: { telegram: true },
  env: {},
  send: async (g, chat, userId, text) => {
    const id = telegramUpdate++;
    const answer = await g.sendTelegram({
      update_id: id,
      message: { message_id: id, date: 0, chat: { id: Number(telegram.chat(chat)), type: 'private' }, from: { id: Number(userId), is_bot: false, first_name: 'U' }, text },
    });
    expect(answer.status).toBe(200);
    return String(answer.body['trace_id']);
  },
  chat: (i) => String(1000 + i),
  entry: (userId) => `telegram:${userId}`,
  replies: (g) => g.telegram!.sent.map((s) => ({ chatId: s.chatId, text: s.text })),
};

let slackTs = 1;
const slack: Harness = {
  platform: 'slack',
  options: { slack: true },
  env: {},
  send: async (g, chat, userId, text) => {
    const ts = `1800000000.${String(slackTs++).padStart(6, '0')}`;
    const answer = await g.sendSlack({
      type: 'event_callback',
      event_id: `Ev${ts}`,
      event: { type: 'message', channel: slack.chat(chat), channel_type: 'channel', user: userId, text, ts },
    });
    expect(answer.status).toBe(200);
    return String(answer.body['trace_id']);
  },
  chat: (i) => `C${1000 + i}`,
  entry: (userId) => `slack:${userId}`,
  replies: (g) => g.slack!.sent.map((s) => ({ chatId: s.channel, text: s.text })),
};

const users = { webhook: ['alice:1', 'bob'], telegram: ['42', '43'], slack: ['U42', 'U43'] } as const;

/** Waits for the reply in `chatId` and returns its text. */
async function replyIn(g: TestGateway, harness: Harness, chatId: string): Promise<string> {
  await until(() => harness.replies(g).some((r) => r.chatId === chatId));
  return harness.replies(g).find((r) => r.chatId === chatId)!.text;
}

/** The command.refused events on the message's agent.turn span. */
async function refusals(g: TestGateway, traceId: string) {
  const spans = await g.waitForSpans(traceId, ['agent.turn']);
  return spans.find((span) => span.name === 'agent.turn')!.events.filter((event) => event.name === 'command.refused').map((event) => event.attributes);
}

/** Sends a `home` delivery of `platform` and resolves with the chat it reached. */
async function homeChat(g: TestGateway, harness: Harness, id: string): Promise<string> {
  await g.running.gateway.router.deliver({
    id,
    kind: 'cron',
    text: 'digest',
    target: { to: 'home', platform: harness.platform },
    origin: webhookOrigin('cron', 'tl_cron'),
  });
  await until(() => harness.replies(g).some((r) => r.text === 'digest'));
  return harness.replies(g).find((r) => r.text === 'digest')!.chatId;
}

describe.each([webhook, telegram, slack])('/sethome on $platform', (harness) => {
  const [admin, stranger] = users[harness.platform as keyof typeof users];

  it('moves the home for an admin, and only refuses, records and logs for anyone else', async () => {
    const g = await startTestGateway({ ...harness.options, env: { ...harness.env, THREADLINE_ADMINS: `slack:U0,${harness.entry(admin)}` } });
    await harness.send(g, 1, admin, '/sethome');
    expect(await replyIn(g, harness, harness.chat(1))).toBe(`This chat is now the home channel for ${harness.platform}.`);
    expect(await refusals(g, await harness.send(g, 1, admin, '/sethome again'))).toEqual([]);

    const traceId = await harness.send(g, 2, stranger, '/sethome');
    expect(await replyIn(g, harness, harness.chat(2))).toBe(
      `/sethome is for admins; ask an admin to add ${harness.entry(stranger)} to THREADLINE_ADMINS.`,
    );
    expect(await refusals(g, traceId)).toEqual([{ 'threadline.command.name': '/sethome', 'threadline.command.reason': 'not-listed' }]);
    expect(await homeChat(g, harness, 'home-1')).toBe(harness.chat(1));
  });

  it('refuses everyone while THREADLINE_ADMINS is unset, and no home is set', async () => {
    const g = await startTestGateway({ ...harness.options, env: harness.env });
    const traceId = await harness.send(g, 1, admin, '/sethome');
    expect(await replyIn(g, harness, harness.chat(1))).toBe(
      `/sethome is for admins; ask an admin to add ${harness.entry(admin)} to THREADLINE_ADMINS.`,
    );
    expect(await refusals(g, traceId)).toEqual([{ 'threadline.command.name': '/sethome', 'threadline.command.reason': 'no-admins' }]);
    assertThreadlineError(await rejectionOf(homeChat(g, harness, 'home-1')), 'TL_HOME_UNSET');
  });

  it('lets anyone with THREADLINE_ADMINS=*', async () => {
    const g = await startTestGateway({ ...harness.options, env: { ...harness.env, THREADLINE_ADMINS: '*' } });
    await harness.send(g, 3, stranger, '/sethome');
    expect(await replyIn(g, harness, harness.chat(3))).toBe(`This chat is now the home channel for ${harness.platform}.`);
    expect(await homeChat(g, harness, 'home-1')).toBe(harness.chat(3));
  });
});

describe('webhook user_id without THREADLINE_WEBHOOK_TOKEN', () => {
  it('names no admin: a listed user_id is refused, and the home is not set', async () => {
    const g = await startTestGateway({ env: { THREADLINE_ADMINS: 'webhook:alice' } });
    const answer = await g.send({ chat_id: 'room', user_id: 'alice', text: '/sethome' });
    expect(await replyIn(g, webhook, 'room')).toBe('/sethome is for admins, and this webhook message was not authenticated, so its user id counts for nobody.');
    expect(await refusals(g, String(answer.body['trace_id']))).toEqual([
      { 'threadline.command.name': '/sethome', 'threadline.command.reason': 'unauthenticated' },
    ]);
    assertThreadlineError(await rejectionOf(homeChat(g, webhook, 'home-1')), 'TL_HOME_UNSET');
  });

  it('is refused, not ignored, when the message names no user', async () => {
    const g = await startTestGateway({ env: { THREADLINE_ADMINS: 'webhook:alice', THREADLINE_WEBHOOK_TOKEN: WEBHOOK_TOKEN } });
    await g.send({ chat_id: 'room', text: '/sethome' }, { authorization: `Bearer ${WEBHOOK_TOKEN}` });
    expect(await replyIn(g, webhook, 'room')).toBe('/sethome is for admins, and this message names no user (an anonymous group admin or a channel posts as nobody: post as yourself).');
  });
});

describe('a refused admin command', () => {
  it('is logged as a warning with the command and the reason, in the chat of the message', async () => {
    installTestTelemetry();
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void lines.push(line) } });
    const running = await startGateway(readGatewayConfig({ PORT: '0', THREADLINE_DATA_DIR: tempDir(), THREADLINE_ADMINS: 'webhook:alice' }), { logger });
    try {
      await fetch(`${running.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: 'room', user_id: 'alice', text: '/sethome' }),
      });
      await until(() => lines.some((line) => line.includes('admin command refused')));
      const record = JSON.parse(lines.find((line) => line.includes('admin command refused'))!) as Record<string, unknown>;
      expect(record).toMatchObject({ level: 40, command: '/sethome', reason: 'unauthenticated', 'chat.id': 'room' });
    } finally {
      await running.stop();
    }
  });
});

describe('an agent that skips authorize()', () => {
  it('still cannot move the home: Turn.setHome() refuses a sender who is no admin', async () => {
    const agent = {
      handle: async (turn: Turn) => {
        await turn.setHome();
        await turn.reply('moved');
      },
    };
    const g = await startTestGateway({ agent, env: { THREADLINE_WEBHOOK_TOKEN: 'secret', THREADLINE_ADMINS: 'webhook:boss' } });
    const auth = { authorization: 'Bearer secret' };
    await g.send({ chat_id: 'office', user_id: 'boss', text: 'move it' }, auth);
    await g.send({ chat_id: 'intruder', user_id: 'mallory', text: 'move it' }, auth);
    const [moved, apology] = await g.receiver.waitFor(2);
    expect(moved!.body.text).toBe('moved');
    expect(apology!.body.text).toMatch(/^Sorry, that failed/);
    await g.running.gateway.router.deliver({ id: 'h/1', kind: 'notification', text: 'to home', target: { to: 'home' }, origin: webhookOrigin('x', 's') });
    const [, , home] = await g.receiver.waitFor(3);
    expect(home!.body.chat_id).toBe('office');
  });
});
