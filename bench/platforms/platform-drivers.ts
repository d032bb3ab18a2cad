/**
 * One driver a platform for `bench:platforms`: the loopback fake of its server (from
 * threadline/testing) in the bench process, the settings that point a gateway at it, how a
 * user's message reaches the gateway (an HTTP push as the platform makes it, or a post the
 * gateway reads from the fake by websocket or /sync), and a count of the replies the fake
 * received. The gateway runs in a process of its own, so the fake's CPU is not its.
 */
import { DeliveryReceiver, FakeDiscord, FakeMatrix, FakeMattermost, FakeSlack, FakeTelegram, TEST_SECRETS } from '../../src/testing/index.js';
import { slackSignature } from '../../src/platforms/slack/slack-signature.js';

/** Where message n goes: `CHATS` chats, every other one with `THREADS` threads, a third of its messages at the top level. */
export const CHATS = 40;
const THREADS = 3;
export interface Place {
  readonly chat: number;
  readonly thread: number | undefined;
}
export function placeOf(n: number): Place {
  const chat = n % CHATS;
  const threaded = chat % 2 === 0 && n % 3 !== 0;
  return { chat, thread: threaded ? Math.floor(n / CHATS) % THREADS : undefined };
}

export interface PlatformDriver {
  readonly name: string;
  /** Settings on top of the common ones: the platform on, pointed at its fake. */
  readonly env: Readonly<Record<string, string>>;
  /** Resolves once the gateway at `url` can take messages (its websocket connected, its /sync reading on). */
  ready(url: string): Promise<void>;
  /** A user's message `text` at `place`; resolves once handed over (the gateway's 2xx, or the fake's post stored). */
  send(url: string, n: number, place: Place, text: string): Promise<void>;
  /** Replies the fake has received so far. */
  replies(): number;
  /** Every call the gateway made to the fake so far, by name (the webhook's: its deliveries), in order. */
  calls(): readonly string[];
  /** Calls `listener` (the last one given) each time a reply arrives at the fake. */
  onReply(listener: () => void): void;
  close(): Promise<void>;
}

/**
 * The fakes record what the bot sent by appending to a public array; the bench hooks the
 * append so the load reacts to a reply at once, with no polling timer in the measured window.
 */
function watchAppends(records: unknown[], listener: () => void): void {
  const push = records.push.bind(records);
  records.push = (...items: unknown[]) => {
    const length = push(...items);
    listener();
    return length;
  };
}

async function postOk(url: string, body: string, headers: Readonly<Record<string, string>>): Promise<void> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
}

/** Waits until `check` holds, checking every `everyMs`: start-up only, never in a measured window. */
async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function driver(parts: Omit<PlatformDriver, 'onReply'> & { readonly records: unknown[] }): PlatformDriver {
  let listener = () => {};
  watchAppends(parts.records, () => listener());
  return { ...parts, onReply: (next) => (listener = next) };
}

export async function webhookDriver(): Promise<PlatformDriver> {
  const receiver = await DeliveryReceiver.start();
  return driver({
    name: 'webhook',
    env: { THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url },
    records: receiver.received,
    ready: async () => {},
    send: (url, n, place, text) =>
      postOk(`${url}/v1/messages`, JSON.stringify({ chat_id: `chat:${place.chat}`, ...(place.thread === undefined ? {} : { thread_id: `t/${place.thread}` }), message_id: `m${n}`, text }), {}),
    replies: () => receiver.received.length,
    calls: () => receiver.received.map(() => 'POST delivery'),
    close: () => receiver.close(),
  });
}

export async function telegramDriver(): Promise<PlatformDriver> {
  const fake = await FakeTelegram.start();
  return driver({
    name: 'telegram',
    env: {
      THREADLINE_TELEGRAM_BOT_TOKEN: TEST_SECRETS.telegramToken,
      THREADLINE_TELEGRAM_API_ROOT: fake.apiRoot,
      THREADLINE_TELEGRAM_MODE: 'webhook',
      THREADLINE_TELEGRAM_WEBHOOK_SECRET: TEST_SECRETS.telegramWebhookSecret,
    },
    records: fake.sent,
    calls: () => fake.calls.map((call) => call.method),
    ready: async () => {},
    // A forum supergroup a chat, its topics the threads.
    send: (url, n, place, text) =>
      postOk(
        `${url}/v1/telegram/webhook`,
        JSON.stringify({
          update_id: n + 1,
          message: {
            message_id: n + 1,
            date: Math.floor(Date.now() / 1000),
            chat: { id: -1001000000000 - place.chat, type: 'supergroup', title: `Team ${place.chat}`, is_forum: true },
            from: { id: 7, is_bot: false, first_name: 'Ann' },
            text,
            ...(place.thread === undefined ? {} : { message_thread_id: 10 + place.thread, is_topic_message: true }),
          },
        }),
        { 'x-telegram-bot-api-secret-token': TEST_SECRETS.telegramWebhookSecret },
      ),
    replies: () => fake.sent.length,
    close: () => fake.close(),
  });
}

export async function slackDriver(): Promise<PlatformDriver> {
  const fake = await FakeSlack.start();
  return driver({
    name: 'slack',
    env: { THREADLINE_SLACK_BOT_TOKEN: TEST_SECRETS.slackBotToken, THREADLINE_SLACK_SIGNING_SECRET: TEST_SECRETS.slackSigningSecret, THREADLINE_SLACK_API_URL: fake.apiUrl },
    records: fake.sent,
    calls: () => fake.calls,
    ready: async () => {},
    // Signed as Slack signs an Events API request; a thread is its root message's ts.
    send: (url, n, place, text) => {
      const raw = JSON.stringify({
        type: 'event_callback',
        event_id: `Ev${n}`,
        event: {
          type: 'message',
          channel: `C${1000 + place.chat}`,
          channel_type: 'channel',
          user: 'U1',
          text,
          ts: `1800000000.${String(n).padStart(6, '0')}`,
          ...(place.thread === undefined ? {} : { thread_ts: `1700000000.${String(place.chat * 10 + place.thread).padStart(6, '0')}` }),
        },
      });
      const timestamp = String(Math.floor(Date.now() / 1000));
      return postOk(`${url}/v1/slack/events`, raw, { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': slackSignature(TEST_SECRETS.slackSigningSecret, timestamp, raw) });
    },
    replies: () => fake.sent.length,
    close: () => fake.close(),
  });
}

export async function matrixDriver(): Promise<PlatformDriver> {
  const fake = await FakeMatrix.start({ accessToken: TEST_SECRETS.matrixAccessToken });
  return driver({
    name: 'matrix',
    env: { THREADLINE_MATRIX_HOMESERVER_URL: fake.homeserverUrl, THREADLINE_MATRIX_ACCESS_TOKEN: TEST_SECRETS.matrixAccessToken },
    records: fake.sent,
    calls: () => fake.calls.map((call) => call.endpoint),
    // Written before the bot's first sync, a message would be history, which a bot's first sync skips.
    ready: () => fake.waitForSinceSyncs(1, 30_000),
    send: async (_url, _n, place, text) => {
      fake.postMessage(`!room${place.chat}:fake.local`, text, { threadRoot: place.thread === undefined ? undefined : `$root${place.chat}-${place.thread}` });
    },
    replies: () => fake.sent.length,
    close: () => fake.close(),
  });
}

export async function mattermostDriver(): Promise<PlatformDriver> {
  const fake = await FakeMattermost.start({ token: TEST_SECRETS.mattermostToken });
  const channels = Array.from({ length: CHATS }, () => fake.addChannel({ type: 'O' }));
  const roots = channels.map((channel) => Array.from({ length: THREADS }, () => fake.addThread(channel)));
  return driver({
    name: 'mattermost',
    env: { THREADLINE_MATTERMOST_URL: fake.url, THREADLINE_MATTERMOST_TOKEN: TEST_SECRETS.mattermostToken },
    records: fake.sent,
    calls: () => fake.calls.map((call) => `${call.method} ${call.route}`),
    // A post written before the websocket is up would wait for a catch-up.
    ready: () => until(() => fake.openConnections > 0, 'the Mattermost websocket', 30_000),
    send: async (_url, _n, place, text) => {
      fake.userPost({ channelId: channels[place.chat]!, message: text, rootId: place.thread === undefined ? undefined : roots[place.chat]![place.thread] });
    },
    replies: () => fake.sent.length,
    close: () => fake.close(),
  });
}

export async function discordDriver(): Promise<PlatformDriver> {
  const fake = await FakeDiscord.start({ token: TEST_SECRETS.discordBotToken });
  const channel = (chat: number) => String(1_200_000_000_000_000_000n + BigInt(chat));
  // A Discord thread is a channel of its own, whose parent the fake knows.
  const thread = (chat: number, index: number) => String(1_400_000_000_000_000_000n + BigInt(chat * THREADS + index));
  for (let chat = 0; chat < CHATS; chat++) for (let index = 0; index < THREADS; index++) fake.addThread(thread(chat, index), channel(chat));
  return driver({
    name: 'discord',
    env: {
      THREADLINE_DISCORD_BOT_TOKEN: TEST_SECRETS.discordBotToken,
      THREADLINE_DISCORD_API_ROOT: fake.apiRoot,
      THREADLINE_DISCORD_PUBLIC_KEY: fake.publicKey,
      // The fake takes what it is sent at once: the gateway's pacing at Discord's 50 a second would hold the loop, not cost CPU.
      THREADLINE_DISCORD_REQUESTS_PER_SECOND: '10000',
    },
    records: fake.sent,
    calls: () => fake.calls.map((call) => call.route),
    // A message written before the bot is connected would never reach it, as on Discord.
    ready: () => fake.connected(0, 30_000),
    // A mention of the bot in a server's channel or thread, as the bot answers.
    send: async (_url, _n, place, text) => {
      fake.userMessage({ channelId: place.thread === undefined ? channel(place.chat) : thread(place.chat, place.thread), content: text });
    },
    replies: () => fake.sent.length,
    close: () => fake.close(),
  });
}

/** Every platform adapter in src/platforms, in the order the figures are printed. */
export const PLATFORM_DRIVERS: readonly (() => Promise<PlatformDriver>)[] = [webhookDriver, telegramDriver, slackDriver, matrixDriver, mattermostDriver, discordDriver];
