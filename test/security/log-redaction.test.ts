import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebClient } from '@slack/web-api';
import { Api } from 'grammy';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/index.js';

const TOKEN = '5550001234:AAHtelegramTokenSecretForThreadline01';
const SLACK_TOKEN = 'xoxb-1111-2222-slackBotTokenSecret';
/** Shaped as Discord's: the bot's id, a time and an HMAC, base64url, dot-separated. */
const DISCORD_TOKEN = 'MTA5ODc2NTQzMjEwOTg3NjU0.GhJkLm.discordBotTokenSecretForThreadline01';
const SECRETS = [TOKEN, TOKEN.split(':')[1]!, SLACK_TOKEN, DISCORD_TOKEN, DISCORD_TOKEN.split('.')[2]!, 'hook-password', 'query-token', 'bearer-secret', 'cookie-secret'];

/** What the logger wrote, as one string, at debug level. */
function logged(write: (logger: ReturnType<typeof createLogger>) => void): string {
  const lines: string[] = [];
  write(createLogger({ level: 'debug', privacy: { privacy: 'plain' }, destination: { write: (line: string) => void lines.push(line) } }));
  return lines.join('');
}

/** The errors the real clients throw when their API cannot be reached (a closed loopback port). */
let telegramError: unknown;
let slackError: unknown;
beforeAll(async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const closed = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise((resolve) => server.close(resolve));
  telegramError = await new Api(TOKEN, { apiRoot: closed }).getMe().catch((error: unknown) => error);
  const slack = new WebClient(SLACK_TOKEN, { slackApiUrl: `${closed}/api/`, retryConfig: { retries: 0 }, logger: silentSlackLogger() });
  slackError = await slack.chat.postMessage({ channel: 'C1', text: 'x' }).catch((error: unknown) => error);
});

describe('no secret in a log line', () => {
  it("keeps grammY's network error (its URL carries the bot token) out, but its message in", () => {
    expect(String((telegramError as { error?: Error }).error?.message)).toContain(TOKEN); // what would leak
    const text = logged((logger) => {
      logger.error({ err: telegramError }, 'telegram polling stopped');
      logger.error(telegramError as Error);
      logger.error({ err: new Error('Telegram could not be reached', { cause: telegramError }) }, 'delivery failed');
    });
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).toContain('/bot<redacted>/getMe');
    expect(text).toContain("Network request for 'getMe' failed!");
  });

  it("keeps the Slack client's error clean", () => {
    const text = logged((logger) => logger.error({ err: slackError }, 'slack send failed'));
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).toContain('slack send failed');
  });

  it("keeps a Discord bot token out: the REST client's error, and the token as text (an Authorization header echoed in a message)", async () => {
    const { REST } = await import('@discordjs/rest');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const closed = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    await new Promise((resolve) => server.close(resolve));
    const discordError = await new REST({ api: closed, retries: 0 }).setToken(DISCORD_TOKEN).get('/users/@me').catch((error: unknown) => error);
    const text = logged((logger) => {
      logger.error({ err: discordError }, 'discord send failed');
      logger.warn(`sent Authorization: Bot ${DISCORD_TOKEN}`);
      logger.error({ err: new Error(`refused token ${DISCORD_TOKEN}`) }, 'discord gateway failed');
    });
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).toContain('discord send failed');
  });

  it('leaves out the objects an error carries (an HTTP client error with its request options and headers)', () => {
    const error = Object.assign(new Error('request failed'), {
      code: 'ECONNRESET',
      status: 502,
      config: { url: 'https://hook:hook-password@x.example/in', headers: { Authorization: 'Bearer bearer-secret' } },
      token: 'query-token',
    });
    const [record] = logged((logger) => logger.error({ err: error }, 'failed'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { err: Record<string, unknown> });
    expect(record!.err).toMatchObject({ type: 'Error', message: 'request failed', code: 'ECONNRESET', status: 502, token: '[redacted]' });
    expect(record!.err).not.toHaveProperty('config');
  });

  it('redacts URLs in messages and `url` fields, and credential fields and headers', () => {
    const text = logged((logger) => {
      logger.warn('posting to https://hook:hook-password@x.example/in?token=query-token');
      logger.info({ url: '/v1/messages?token=query-token', method: 'POST' }, 'request failed');
      logger.info({ url: 'https://hook:hook-password@x.example/in?token=query-token' }, 'target');
      logger.info({ headers: { authorization: 'Bearer bearer-secret', cookie: 'cookie-secret' }, token: 'query-token' }, 'headers');
      logger.info({ request: { headers: { authorization: 'Bearer bearer-secret' } } }, 'nested headers');
      logger.info({ options: { botToken: TOKEN, signingSecret: 'query-token', password: 'hook-password' } }, 'options');
    });
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).toContain('https://x.example/in');
    expect(text).toContain('"url":"/v1/messages"');
  });
});

function silentSlackLogger() {
  const nothing = () => undefined;
  return { debug: nothing, info: nothing, warn: nothing, error: nothing, setLevel: nothing, getLevel: () => 'error', setName: nothing } as never;
}
