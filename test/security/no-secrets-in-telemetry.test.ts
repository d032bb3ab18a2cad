import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { slackSignature } from '../../src/platforms/slack/slack-signature.js';
import { DeliveryReceiver, FakeDiscord, FakeMattermost, FakeMatrix, FakeSlack, FakeTelegram, fakeMattermostId } from '../../src/testing/index.js';
import { startLocalServer, type LocalServer } from '../../src/testing/local-server.js';
import { until } from '../helpers/gateway.js';
import { isolatedEnv, runGatewayProcess } from '../helpers/gateway-process.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * The gateway as `npm start` runs it (register, then cli/main), with Telegram, Slack, Mattermost,
 * Matrix, Discord and the webhook against loopback fakes, logs at debug, and each exporter in turn: no secret it was
 * configured with may appear in any byte it wrote (banner, logs, trace file, OTLP bodies, the
 * data dir).
 */
const tempDir = useTempDir('no-secrets');

const SECRETS = {
  telegramToken: '5550001234:AAHtelegramTokenSecretForThreadline01',
  telegramWebhookSecret: 'tg-webhook-secret-7Q2xV9',
  slackBotToken: 'xoxb-1111-2222-slackBotTokenSecret',
  slackSigningSecret: 'slack-signing-secret-K8pL3m',
  matrixAccessToken: 'syt_matrixAccessTokenSecret_Q9wE3r',
  webhookBearer: 'webhook-bearer-secret-Z4nR6t',
  deliveryPassword: 'delivery-password-M1wQ8s',
  deliveryQueryToken: 'delivery-query-token-B5yH2k',
  otlpPassword: 'otlp-password-F7gJ3d',
  otlpQueryKey: 'otlp-query-key-W2eT9u',
  inboundQueryToken: 'inbound-query-token-P6vC1x',
  hmacKey: 'hmac-key-secret-0123456789abcdef',
  mattermostToken: 'mattermost-bot-token-secret-Y3hK9q',
  /** Shaped as Discord's: the bot's id, a time and an HMAC, base64url. */
  discordBotToken: 'MTA5ODc2NTQzMjEwOTg3NjU0.GhJkLm.discordBotTokenSecretForThreadline01',
};
/** The secret half of the bot token: what a partial redaction would leave. */
const TOKEN_TAIL = SECRETS.telegramToken.split(':')[1]!;
/** The HMAC part of the Discord token. */
const DISCORD_TOKEN_TAIL = SECRETS.discordBotToken.split('.')[2]!;
/** Chat ids that hmac mode must keep out of the logs. */
const CHATS = {
  webhook: 'plain-chat-id-webhook-42',
  telegram: -1009876543210,
  slack: 'CPLAINSLACK42',
  mattermost: fakeMattermostId('plainmattermost', 42),
  matrix: '!plainMatrixRoom42:fake.local',
  discord: '1234567890123456789',
};

interface Run {
  readonly output: string;
  readonly code: number | null;
  readonly written: Buffer;
}

type Exporter = 'file' | 'http/json' | 'http/protobuf';

async function runGateway(exporter: Exporter): Promise<Run> {
  const dataDir = join(tempDir(), exporter.replace('/', '-'));
  const [telegram, slack, mattermost, receiver, matrix, discord] = await Promise.all([
    FakeTelegram.start(),
    FakeSlack.start(),
    FakeMattermost.start({ token: SECRETS.mattermostToken }),
    DeliveryReceiver.start(),
    FakeMatrix.start({ accessToken: SECRETS.matrixAccessToken }),
    FakeDiscord.start({ token: SECRETS.discordBotToken }),
  ]);
  const otlpBodies: Buffer[] = [];
  const otlp: LocalServer = await startLocalServer((request) => {
    otlpBodies.push(request.raw);
    return { status: 200, headers: { 'content-type': String(request.headers['content-type']) }, body: '' };
  });
  const deliveryUrl = new URL(receiver.url);
  deliveryUrl.username = 'hook';
  deliveryUrl.password = SECRETS.deliveryPassword;
  deliveryUrl.search = `?token=${SECRETS.deliveryQueryToken}`;
  const env = isolatedEnv({
    THREADLINE_DATA_DIR: dataDir,
    THREADLINE_LOG_LEVEL: 'debug',
    THREADLINE_SPAN_PRIVACY: 'hmac',
    THREADLINE_SPAN_HMAC_KEY: SECRETS.hmacKey,
    THREADLINE_DELIVERY_BACKOFF_MS: '20',
    THREADLINE_WEBHOOK_TOKEN: SECRETS.webhookBearer,
    THREADLINE_WEBHOOK_DELIVERY_URL: deliveryUrl.href,
    THREADLINE_TELEGRAM_BOT_TOKEN: SECRETS.telegramToken,
    THREADLINE_TELEGRAM_WEBHOOK_SECRET: SECRETS.telegramWebhookSecret,
    THREADLINE_TELEGRAM_API_ROOT: telegram.apiRoot,
    THREADLINE_SLACK_BOT_TOKEN: SECRETS.slackBotToken,
    THREADLINE_SLACK_SIGNING_SECRET: SECRETS.slackSigningSecret,
    THREADLINE_SLACK_API_URL: slack.apiUrl,
    THREADLINE_MATTERMOST_URL: mattermost.url,
    THREADLINE_MATTERMOST_TOKEN: SECRETS.mattermostToken,
    THREADLINE_MATRIX_HOMESERVER_URL: matrix.homeserverUrl,
    THREADLINE_MATRIX_ACCESS_TOKEN: SECRETS.matrixAccessToken,
    THREADLINE_DISCORD_BOT_TOKEN: SECRETS.discordBotToken,
    THREADLINE_DISCORD_API_ROOT: discord.apiRoot,
    ...(exporter === 'file'
      ? {}
      : {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://collector:${SECRETS.otlpPassword}@${otlp.origin.slice('http://'.length)}/v1/traces?key=${SECRETS.otlpQueryKey}`,
          OTEL_EXPORTER_OTLP_PROTOCOL: exporter,
          OTEL_EXPORTER_OTLP_COMPRESSION: 'none',
        }),
  });
  const { output, code } = await runGatewayProcess(env, async (base, soFar) => {
    await exercise(base, { telegram, slack, mattermost, receiver, matrix, discord });
    await until(() => count(soFar(), 'delivery failed for good') >= 6, 15_000);
  });
  await Promise.all([telegram.close(), slack.close(), mattermost.close(), receiver.close(), otlp.close(), matrix.close(), discord.close()]);
  const files = readdirSync(dataDir)
    .map((name) => join(dataDir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => readFileSync(path));
  return { output, code, written: Buffer.concat([Buffer.from(output), ...otlpBodies, ...files]) };
}

/** Real sends through every platform, two each: one fails for good (an error logged), one gets through. */
async function exercise(
  base: string,
  fakes: { telegram: FakeTelegram; slack: FakeSlack; mattermost: FakeMattermost; receiver: DeliveryReceiver; matrix: FakeMatrix; discord: FakeDiscord },
): Promise<void> {
  const post = (path: string, body: object, headers: Record<string, string>) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  fakes.receiver.failNext(1, 400);
  fakes.telegram.failNext(1, 400);
  fakes.slack.refuseNext('channel_not_found');
  fakes.mattermost.failNext(1, 400);
  fakes.matrix.failNext(1, { status: 403, errcode: 'M_FORBIDDEN' });
  fakes.discord.failNext(1, { status: 403, code: 50013 });
  await fakes.mattermost.waitForConnections(1, 15_000);
  // What was written before the bot's first sync is history, which it does not answer; Discord keeps nothing for a bot not connected.
  await Promise.all([fakes.matrix.waitForSinceSyncs(1, 15_000), fakes.discord.connected(0, 15_000)]);
  const bearer = { authorization: `Bearer ${SECRETS.webhookBearer}` };
  // A caller that put its token in the query: refused, and the query is in no span.
  expect((await post(`/v1/messages?token=${SECRETS.inboundQueryToken}`, { chat_id: CHATS.webhook, text: 'x' }, {})).status).toBe(401);
  for (const n of [1, 2]) {
    expect((await post('/v1/messages', { chat_id: CHATS.webhook, text: `webhook ${n}` }, bearer)).status).toBe(202);
    const from = { id: 7, is_bot: false, first_name: 'A' };
    const update = { update_id: n, message: { message_id: n, date: 0, chat: { id: CHATS.telegram, type: 'supergroup', title: 'T' }, from, text: `tg ${n}` } };
    expect((await post('/v1/telegram/webhook', update, { 'x-telegram-bot-api-secret-token': SECRETS.telegramWebhookSecret })).status).toBe(200);
    const event = { type: 'event_callback', event_id: `Ev${n}`, event: { type: 'message', channel: CHATS.slack, channel_type: 'channel', user: 'U1', text: `slack ${n}`, ts: `1800000000.00000${n}` } };
    const raw = JSON.stringify(event);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = slackSignature(SECRETS.slackSigningSecret, timestamp, raw);
    expect((await post('/v1/slack/events', event, { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature })).status).toBe(200);
    fakes.mattermost.userPost({ channelId: CHATS.mattermost, message: `mattermost ${n}` });
    fakes.matrix.postMessage(CHATS.matrix, `matrix ${n}`, { threadRoot: '$plainMatrixThread' });
    fakes.discord.userMessage({ channelId: CHATS.discord, content: `discord ${n}` });
  }
  // A slash command over the Gateway: its answer goes to a route that holds the interaction's token.
  const command = fakes.discord.slashCommand({ channelId: CHATS.discord, name: 'ask', options: { text: 'discord command' } }) as { token: string };
  interactionTokens.push(command.token);
  fakes.discord.dispatchInteraction(command);
  await until(() => fakes.discord.interactionAnswers.length === 1, 15_000);
  await until(
    () =>
      fakes.receiver.received.length >= 1 &&
      fakes.telegram.sent.length >= 1 &&
      fakes.slack.sent.length >= 1 &&
      fakes.mattermost.sent.length >= 1 &&
      fakes.matrix.sent.length >= 1 &&
      fakes.discord.sent.length >= 1,
    15_000,
  );
}

/** Interaction tokens the runs used: each a secret for 15 minutes, in the path of the route its answer goes to. */
const interactionTokens: string[] = [];

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe.each<Exporter>(['file', 'http/json', 'http/protobuf'])('no secret in anything the gateway writes, exporting %s', (exporter) => {
  let run: Run;
  beforeAll(async () => {
    run = await runGateway(exporter);
  }, 90_000);

  it('ran: started, sent through every platform, logged the failures, stopped cleanly', () => {
    expect(run.code, run.output).toBe(0);
    expect(count(run.output, 'delivery failed for good')).toBeGreaterThanOrEqual(6);
    // Spans were written: the Telegram client span's URL, redacted.
    expect(run.written.includes('/bot<redacted>/sendMessage')).toBe(true);
  });

  it.each(Object.entries({ ...SECRETS, tokenTail: TOKEN_TAIL, discordTokenTail: DISCORD_TOKEN_TAIL }))('%s appears nowhere', (_name, secret) => {
    for (const form of new Set([secret, encodeURIComponent(secret)])) {
      const at = run.written.indexOf(form);
      expect(at < 0 ? '' : run.written.subarray(Math.max(0, at - 200), at + 100).toString(), `found ${form}`).toBe('');
    }
  });

  it("the Discord interaction's token appears nowhere, though its answer's route held it", () => {
    const token = interactionTokens.at(-1)!;
    const at = run.written.indexOf(token);
    expect(at < 0 ? '' : run.written.subarray(Math.max(0, at - 200), at + 100).toString()).toBe('');
    if (exporter !== 'file') expect(run.written.includes('/interactions/')).toBe(true);
  });

  it('banner shows delivery and OTLP URLs as origin and path', () => {
    const banner = run.output.split('\n').find((line) => line.startsWith('threadline ready · listening on'))!;
    expect(banner).toMatch(/→ http:\/\/127\.0\.0\.1:\d+\/deliveries( |$)/);
    if (exporter !== 'file') expect(banner).toMatch(/otlp \S+ http:\/\/127\.0\.0\.1:\d+\/v1\/traces · metrics off$/);
  });

  it('logs carry pseudonyms in hmac mode, not the chat id', () => {
    const logs = run.output.split('\n').filter((line) => line.startsWith('{'));
    expect(logs.length).toBeGreaterThan(0);
    // As written, and percent-encoded as in a URL's path (a Matrix room id is one).
    for (const chat of Object.values(CHATS)) {
      for (const form of new Set([String(chat), encodeURIComponent(String(chat))])) expect(logs.filter((line) => line.includes(form))).toEqual([]);
    }
    expect(logs.some((line) => /"chat\.id":"h_[\w-]{22}"/.test(line))).toBe(true);
  });
});

