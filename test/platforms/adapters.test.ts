import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { fakeMattermostId, type FakeMattermost, type TestGateway, type TestGatewayOptions } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

/** What a test needs of one platform: send as a chat and thread, read what went out. */
interface AdapterHarness {
  readonly name: string;
  readonly options: TestGatewayOptions;
  chat(index: number): string;
  thread(index: number): string;
  inbound(g: TestGateway, m: { chatId: string; threadId?: string | undefined; text: string; messageId: number }): Promise<number>;
  badAuth(g: TestGateway): Promise<number>;
  sent(g: TestGateway): { chatId: string; threadId: string | undefined; text: string; replyTo: string | undefined }[];
  rateLimitNext(g: TestGateway, retryAfterSeconds: number): void;
  /** Who sits out a short 429: the outbox, counting a retry (the default), or the platform's client, inside the call. */
  readonly rateLimitWaitedBy?: 'outbox' | 'client';
  /** Where "typing…" was shown, in order (Telegram: sendChatAction; Slack: the thread's status). */
  typed(g: TestGateway): { chatId: string; threadId: string | undefined }[];
  /** Every outbound call, in order: `typing`, `send`, or the platform's method name. */
  calls(g: TestGateway): string[];
  /** The texts a chat shows now (edits applied), oldest first, with their platform message ids. */
  shown(g: TestGateway, chatId: string): { id: string; threadId: string | undefined; text: string }[];
  /** Deletes a message as a user could. */
  deleteMessage(g: TestGateway, id: string): void;
  /** Files sent, with the text that went with them (caption, comment). */
  files(g: TestGateway): { chatId: string; text: string | undefined }[];
  /** Typing shows in a whole chat, not in a thread (Matrix): where it was shown names no thread. */
  readonly typingPerChat?: true;
}

const telegram: AdapterHarness = {
  name: 'telegram',
  options: { telegram: true },
  chat: (i) => String(-1001000000000 - i),
  thread: (i) => String(10 + i),
  inbound: async (g, m) =>
    (
      await g.sendTelegram({
        update_id: m.messageId,
        message: {
          message_id: m.messageId,
          date: 0,
          chat: { id: Number(m.chatId), type: 'supergroup', title: 'Team', is_forum: true },
          from: { id: 7, is_bot: false, first_name: 'Ann' },
          text: m.text,
          ...(m.threadId === undefined ? {} : { message_thread_id: Number(m.threadId), is_topic_message: true }),
        },
      })
    ).status,
  badAuth: async (g) => (await g.sendTelegram({ update_id: 1 }, 'wrong-secret')).status,
  sent: (g) => g.telegram!.sent,
  rateLimitNext: (g, seconds) => g.telegram!.failNext(1, 429, seconds),
  typed: (g) => g.telegram!.actions.filter((a) => a.action === 'typing'),
  calls: (g) => g.telegram!.calls.map((c) => (c.method === 'sendChatAction' ? 'typing' : c.method === 'sendMessage' ? 'send' : c.method)),
  shown: (g, chatId) => g.telegram!.messagesIn(chatId).map((m) => ({ id: m.messageId, threadId: m.threadId, text: m.text })),
  deleteMessage: (g, id) => g.telegram!.deleteMessage(id),
  files: (g) => g.telegram!.files.map((f) => ({ chatId: f.chatId, text: f.caption })),
};

const slack: AdapterHarness = {
  name: 'slack',
  options: { slack: true },
  chat: (i) => `C${1000 + i}`,
  thread: (i) => `1700000000.${String(i).padStart(6, '0')}`,
  inbound: async (g, m) =>
    (
      await g.sendSlack({
        type: 'event_callback',
        event_id: `Ev${m.messageId}`,
        event: {
          type: 'message',
          channel: m.chatId,
          channel_type: 'channel',
          user: 'U1',
          text: m.text,
          ts: `1800000000.${String(m.messageId).padStart(6, '0')}`,
          ...(m.threadId === undefined ? {} : { thread_ts: m.threadId }),
        },
      })
    ).status,
  badAuth: async (g) => (await g.sendSlack({ type: 'event_callback' }, 'wrong-secret')).status,
  sent: (g) => g.slack!.sent.map((s) => ({ chatId: s.channel, threadId: s.threadTs, text: s.text, replyTo: undefined })),
  rateLimitNext: (g, seconds) => g.slack!.failNext(1, 429, seconds),
  typed: (g) => g.slack!.statuses.filter((s) => s.status !== '').map((s) => ({ chatId: s.channel, threadId: s.threadTs })),
  calls: (g) => g.slack!.calls.map((c) => (c === 'assistant.threads.setStatus' ? 'typing' : c === 'chat.postMessage' ? 'send' : c)),
  shown: (g, chatId) => g.slack!.messagesIn(chatId).map((m) => ({ id: m.ts, threadId: m.threadTs, text: m.text })),
  deleteMessage: (g, id) => g.slack!.deleteMessage(id),
  files: (g) => g.slack!.files.map((f) => ({ chatId: f.channel, text: f.initialComment })),
};

/**
 * Mattermost: a thread is rooted at a post of its channel, and a post id is unique on the
 * server. The suite reuses thread(i) under several chats, so each (chat, thread) pair it
 * writes in gets a root post of its own, which maps back to the suite's thread id. A suite
 * thread id sent to as it is (postLive, an explicit destination) becomes a thread of the
 * channel it is first used in, as the fake does with a root it has not seen.
 */
const mattermostRoots = new WeakMap<FakeMattermost, Map<string, string>>();
function mattermostRoot(fake: FakeMattermost, chatId: string, threadId: string): string {
  const roots = mattermostRoots.get(fake) ?? new Map<string, string>();
  mattermostRoots.set(fake, roots);
  const key = `${chatId}/${threadId}`;
  if (!roots.has(key)) roots.set(key, fake.addThread(chatId));
  return roots.get(key)!;
}
/** The suite's thread id of a root post id. */
function mattermostThread(fake: FakeMattermost, rootId: string | undefined): string | undefined {
  if (rootId === undefined || rootId === '') return undefined;
  const entry = [...(mattermostRoots.get(fake) ?? new Map<string, string>())].find(([, root]) => root === rootId);
  return entry === undefined ? rootId : entry[0].split('/')[1];
}

const mattermost: AdapterHarness = {
  name: 'mattermost',
  options: { mattermost: true },
  chat: (i) => fakeMattermostId('c', i),
  thread: (i) => fakeMattermostId('t', i),
  inbound: async (g, m) => {
    const fake = g.mattermost!;
    fake.userPost({ channelId: m.chatId, message: m.text, rootId: m.threadId === undefined ? undefined : mattermostRoot(fake, m.chatId, m.threadId) });
    return 200;
  },
  // Posts come over the bot's own authenticated websocket: one with another token is refused there.
  badAuth: async (g) => ((await g.mattermost!.tryAuthenticate('wrong-token')) ? 200 : 401),
  sent: (g) => g.mattermost!.sent.map((s) => ({ chatId: s.channelId, threadId: mattermostThread(g.mattermost!, s.rootId), text: s.message, replyTo: undefined })),
  rateLimitNext: (g, seconds) => g.mattermost!.failNext(1, 429, { retryAfter: seconds }),
  typed: (g) => g.mattermost!.typing.map((t) => ({ chatId: t.channelId, threadId: mattermostThread(g.mattermost!, t.parentId) })),
  calls: (g) =>
    g.mattermost!.calls
      .filter((c) => c.method !== 'GET' && c.route !== 'authentication_challenge')
      .map((c) => (c.route === 'user_typing' || c.route === '/users/me/typing' ? 'typing' : c.route === '/posts' ? 'send' : `${c.method} ${c.route}`)),
  shown: (g, chatId) =>
    g.mattermost!
      .messagesIn(chatId)
      .filter((p) => p.user_id === g.mattermost!.botUserId && (p.message !== '' || p.file_ids.length === 0))
      .map((p) => ({ id: p.id, threadId: mattermostThread(g.mattermost!, p.root_id), text: p.message })),
  deleteMessage: (g, id) => g.mattermost!.deletePost(id),
  files: (g) =>
    g.mattermost!.files.map((f) => {
      const post = g.mattermost!.sent.find((s) => s.fileIds.includes(f.fileId));
      return { chatId: f.channelId, text: post?.message === '' ? undefined : post?.message };
    }),
};

/**
 * Matrix: rooms and threads (a thread is its root event's id). Messages are fetched by the
 * bot's /sync, never pushed to the gateway: what a wrong credential meets is the homeserver's 401.
 */
const matrix: AdapterHarness = {
  name: 'matrix',
  options: { matrix: true },
  chat: (i) => `!room${i}:fake.local`,
  thread: (i) => `$root${i}`,
  inbound: async (g, m) => {
    g.matrix!.postMessage(m.chatId, m.text, { threadRoot: m.threadId });
    return 200;
  },
  badAuth: async (g) => (await fetch(`${g.matrix!.homeserverUrl}/_matrix/client/v3/account/whoami`, { headers: { authorization: 'Bearer wrong-token' } })).status,
  sent: (g) => g.matrix!.sent.map((s) => ({ chatId: s.roomId, threadId: s.threadRoot, text: s.body, replyTo: s.replyTo })),
  rateLimitNext: (g, seconds) => g.matrix!.failNext(1, { retryAfterMs: seconds * 1000 }),
  typed: (g) => g.matrix!.typing.filter((t) => t.typing).map((t) => ({ chatId: t.roomId, threadId: undefined })),
  calls: (g) => g.matrix!.calls.filter((c) => c.endpoint !== 'sync').map((c) => c.endpoint),
  shown: (g, chatId) => g.matrix!.messagesIn(chatId).filter((m) => m.sender === g.matrix!.userId).map((m) => ({ id: m.eventId, threadId: m.threadRoot, text: m.body })),
  deleteMessage: (g, id) => g.matrix!.redact(id),
  files: (g) => g.matrix!.files.map((f) => ({ chatId: f.roomId, text: f.body === f.filename ? undefined : f.body })),
  typingPerChat: true,
};

/**
 * Discord: a thread is a channel of its own, and belongs to one channel. The suite reuses
 * thread(i) under several chats, so each (chat, thread) pair it writes in gets a thread
 * channel of its own, which the fake knows as a thread of the chat.
 */
const discordPlaces = new Map<string, { chatId: string; threadId: string }>();
let discordThreadIds = 4000000000000000000n;
function discordChannel(g: TestGateway, chatId: string, threadId: string | undefined): string {
  if (threadId === undefined) return chatId;
  const known = [...discordPlaces].find(([, place]) => place.chatId === chatId && place.threadId === threadId);
  if (known !== undefined) return known[0];
  const channel = String(discordThreadIds++);
  discordPlaces.set(channel, { chatId, threadId });
  g.discord!.addThread(channel, chatId);
  return channel;
}
/**
 * Where a channel the bot wrote in is, in the suite's terms. A suite thread id sent to as it is
 * (postLive, a delivery's explicit destination) was never written in: its chat is whichever
 * chat the test asks about (`undefined` here).
 */
function discordPlace(channelId: string): { chatId: string | undefined; threadId: string | undefined } {
  const place = discordPlaces.get(channelId);
  if (place !== undefined) return place;
  return channelId.startsWith('3') ? { chatId: undefined, threadId: channelId } : { chatId: channelId, threadId: undefined };
}

const discord: AdapterHarness = {
  name: 'discord',
  options: { discord: true },
  chat: (i) => String(2000000000000000000n + BigInt(i)),
  thread: (i) => String(3000000000000000000n + BigInt(i)),
  inbound: async (g, m) => {
    g.discord!.userMessage({ channelId: discordChannel(g, m.chatId, m.threadId), content: m.text });
    return 200;
  },
  // Messages come over the bot's own Gateway connection; slash commands, signed, over HTTP.
  badAuth: async (g) => (await g.sendDiscordInteraction(g.discord!.slashCommand({ channelId: discord.chat(1), name: 'ask', options: { text: 'x' } }), { forged: true })).status,
  sent: (g) => g.discord!.sent.map((s) => ({ ...discordPlace(s.channelId), chatId: discordPlace(s.channelId).chatId ?? s.channelId, text: s.content, replyTo: s.replyTo })),
  rateLimitNext: (g, seconds) => g.discord!.failNext(1, { status: 429, retryAfter: seconds }),
  // @discordjs/rest sits out a wait this short per its route bucket; a longer one goes to the outbox (see discord-rate-limits).
  rateLimitWaitedBy: 'client',
  typed: (g) => g.discord!.typing.map((t) => ({ ...discordPlace(t.channelId), chatId: discordPlace(t.channelId).chatId ?? t.channelId })),
  calls: (g) =>
    g.discord!.calls
      .filter((c) => !c.route.startsWith('GET '))
      .map((c) => (c.route === 'POST /channels/:id/typing' ? 'typing' : c.route === 'POST /channels/:id/messages' ? 'send' : c.route)),
  shown: (g, chatId) =>
    g.discord!.sent
      .map((s) => s.channelId)
      .filter((channel, index, all) => all.indexOf(channel) === index)
      .filter((channel) => [chatId, undefined].includes(discordPlace(channel).chatId))
      .flatMap((channel) => g.discord!.messagesIn(channel).filter((m) => m.channelId === channel))
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
      .map((m) => ({ id: m.id, threadId: discordPlace(m.channelId).threadId, text: m.content })),
  deleteMessage: (g, id) => g.discord!.deleteMessage(id),
  files: (g) => g.discord!.files.map((f) => ({ chatId: discordPlace(f.channelId).chatId ?? f.channelId, text: f.content })),
};

/** An agent that answers with the message's text once `release(text)` is called for it. */
function heldAgent(): { agent: Agent; release(text: string): void } {
  const gates = new Map<string, () => void>();
  const waits = new Map<string, Promise<void>>();
  const gate = (text: string) => {
    if (!waits.has(text)) waits.set(text, new Promise<void>((resolve) => gates.set(text, resolve)));
    return waits.get(text)!;
  };
  return {
    agent: {
      handle: async (turn) => {
        await gate(turn.text);
        await turn.reply(turn.text);
      },
    },
    release: (text) => {
      void gate(text);
      gates.get(text)!();
    },
  };
}

const startTestGateway = useTestGateways();
let gateway: TestGateway | undefined;


describe.each([telegram, slack, mattermost, matrix, discord])('$name adapter', (adapter) => {
  /** The thread typing shows in: none where it shows in the whole chat. */
  const typedIn = (thread: string) => (adapter.typingPerChat ? undefined : thread);
  it('replies into the same chat and thread', async () => {
    gateway = await startTestGateway({ ...adapter.options, env: { THREADLINE_DELIVERY_BACKOFF_MS: '20' } });
    expect(await adapter.inbound(gateway, { chatId: adapter.chat(1), threadId: adapter.thread(1), text: 'in topic', messageId: 5 })).toBe(200);
    expect(await adapter.inbound(gateway, { chatId: adapter.chat(2), text: 'no topic', messageId: 6 })).toBe(200);
    await until(() => adapter.sent(gateway!).length === 2);
    const sent = adapter.sent(gateway);
    expect(sent.find((s) => s.text === 'in topic')).toMatchObject({ chatId: adapter.chat(1), threadId: adapter.thread(1) });
    expect(sent.find((s) => s.text === 'no topic')).toMatchObject({ chatId: adapter.chat(2), threadId: undefined });
  });

  it('shows typing first, in the chat and thread of the turn, repeated until the answer, then stops', async () => {
    const { agent, release } = heldAgent();
    gateway = await startTestGateway({ ...adapter.options, agent, env: { THREADLINE_TYPING_INTERVAL_MS: '20' } });
    const g = gateway;
    await adapter.inbound(g, { chatId: adapter.chat(1), threadId: adapter.thread(1), text: 'first', messageId: 31 });
    // Repeated while the turn runs: three of them take two intervals.
    await until(() => adapter.typed(g).length >= 3);
    expect(adapter.calls(g)[0]).toBe('typing');
    release('first');
    await until(() => adapter.sent(g).length === 1);
    const typedBefore = adapter.typed(g).length;
    expect(adapter.typed(g).every((t) => t.chatId === adapter.chat(1) && t.threadId === typedIn(adapter.thread(1)))).toBe(true);
    // Another turn's typing is the clock: once it repeated twice, the first chat's would have too.
    await adapter.inbound(g, { chatId: adapter.chat(2), threadId: adapter.thread(2), text: 'second', messageId: 32 });
    await until(() => adapter.typed(g).filter((t) => t.chatId === adapter.chat(2)).length >= 3);
    release('second');
    await until(() => adapter.sent(g).length === 2);
    expect(adapter.typed(g).filter((t) => t.chatId === adapter.chat(1))).toHaveLength(typedBefore);
    expect(adapter.typed(g).every((t) => t.threadId === typedIn(t.chatId === adapter.chat(1) ? adapter.thread(1) : adapter.thread(2)))).toBe(true);
  });

  it('edits the live message a delivery replaces into its text, or sends anew when it is gone; never elsewhere', async () => {
    gateway = await startTestGateway(adapter.options);
    const g = gateway;
    const platform = g.running.platforms.find((p) => p.name === adapter.name)!;
    const chatId = adapter.chat(4);
    const threadId = adapter.thread(4);
    const target = { destination: { platform: adapter.name, chatId, threadId }, chatType: 'group' as const };
    const signal = new AbortController().signal;
    const kept = await platform.postLive!(target, 'Writing the answ', signal);
    const gone = await platform.postLive!(target, 'Another one bei', signal);
    adapter.deleteMessage(g, gone);
    const origin = { v: 1 as const, session: { platform: adapter.name, chatType: 'group' as const, chatId, threadId, sessionId: 'tl_s' } };
    const { router } = g.running.gateway;
    await router.deliver({ id: 'live/1', kind: 'reply', text: 'Writing the answer: done.', origin, replaces: kept });
    await router.deliver({ id: 'live/2', kind: 'reply', text: 'Another one, final.', origin, replaces: gone });
    // Sent to another thread, the live message is left alone: that delivery is a new message.
    const elsewhere = { platform: adapter.name, chatId, threadId: adapter.thread(5) };
    await router.deliver({ id: 'live/3', kind: 'send', text: 'Elsewhere.', origin, replaces: kept, target: { to: 'explicit', destination: elsewhere } });
    await until(() => g.running.gateway.outbox.stats().delivered === 3);
    expect(adapter.shown(g, chatId)).toEqual([
      { id: kept, threadId, text: 'Writing the answer: done.' },
      { id: expect.any(String), threadId, text: 'Another one, final.' },
      { id: expect.any(String), threadId: adapter.thread(5), text: 'Elsewhere.' },
    ]);
  });

  it('with a file, edits the live message into the text and sends the file without repeating it', async () => {
    gateway = await startTestGateway(adapter.options);
    const g = gateway;
    const platform = g.running.platforms.find((p) => p.name === adapter.name)!;
    const chatId = adapter.chat(6);
    const target = { destination: { platform: adapter.name, chatId }, chatType: 'group' as const };
    const live = await platform.postLive!(target, 'Here is your voice n', new AbortController().signal);
    const origin = { v: 1 as const, session: { platform: adapter.name, chatType: 'group' as const, chatId, sessionId: 'tl_s' } };
    const attachment = { filename: 'voice.ogg', contentType: 'audio/ogg', dataBase64: Buffer.from('OggS fake').toString('base64') };
    await g.running.gateway.router.deliver({ id: 'file/1', kind: 'reply', text: 'Here is your voice note.', origin, replaces: live, attachment });
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(adapter.shown(g, chatId).map((m) => [m.id, m.text])).toEqual([[live, 'Here is your voice note.']]);
    expect(adapter.files(g)).toEqual([{ chatId, text: undefined }]);
  });

  it('refuses a bad signature or secret with 401', async () => {
    gateway = await startTestGateway(adapter.options);
    expect(await adapter.badAuth(gateway)).toBe(401);
    expect(adapter.sent(gateway)).toEqual([]);
  });

  it('honours a 429 with its retry-after, then delivers once', async () => {
    gateway = await startTestGateway(adapter.options);
    adapter.rateLimitNext(gateway, 1);
    const started = Date.now();
    await adapter.inbound(gateway, { chatId: adapter.chat(3), threadId: adapter.thread(3), text: 'later', messageId: 7 });
    await until(() => adapter.sent(gateway!).length === 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(adapter.sent(gateway)[0]).toMatchObject({ chatId: adapter.chat(3), threadId: adapter.thread(3), text: 'later' });
    expect(gateway.running.gateway.outbox.stats().retried).toBe(adapter.rateLimitWaitedBy === 'client' ? 0 : 1);
  });

  it('routes 200 concurrent messages across 40 chats and threads to their own origins', async () => {
    gateway = await startTestGateway(adapter.options);
    const messages = Array.from({ length: 200 }, (_, i) => ({
      chatId: adapter.chat(i % 40),
      threadId: i % 3 === 0 ? undefined : adapter.thread(i % 7),
      text: `m${i}`,
      messageId: 100 + i,
    }));
    const statuses = await Promise.all(messages.map((m) => adapter.inbound(gateway!, m)));
    expect(statuses.every((status) => status === 200)).toBe(true);
    await until(() => adapter.sent(gateway!).length === 200);
    const byText = new Map(adapter.sent(gateway).map((s) => [s.text, s]));
    for (const m of messages) expect(byText.get(m.text)).toMatchObject({ chatId: m.chatId, threadId: m.threadId });
  });
});

describe('telegram specifics', () => {
  it('replies with the reply anchor and never to General when the message was in a topic', async () => {
    gateway = await startTestGateway({ telegram: true });
    await telegram.inbound(gateway, { chatId: '-1001', threadId: '77', text: 'q', messageId: 42 });
    await until(() => gateway!.telegram!.sent.length === 1);
    expect(gateway.telegram!.sent[0]).toMatchObject({ chatId: '-1001', threadId: '77', text: 'q', replyTo: '42' });
  });

  it('answers a turn whose typing failed: typing is best-effort', async () => {
    gateway = await startTestGateway({ telegram: true });
    gateway.telegram!.failNext(1, 500, undefined, 'sendChatAction');
    await telegram.inbound(gateway, { chatId: '-1003', threadId: '8', text: 'still answered', messageId: 43 });
    await until(() => gateway!.running.gateway.outbox.stats().delivered === 1);
    expect(gateway.telegram!.calls[0]).toMatchObject({ method: 'sendChatAction', chatId: '-1003', threadId: '8' });
    expect(gateway.telegram!.actions).toEqual([]);
    expect(gateway.telegram!.sent[0]).toMatchObject({ chatId: '-1003', threadId: '8', text: 'still answered' });
    expect(gateway.running.gateway.outbox.stats()).toMatchObject({ delivered: 1, retried: 0, failed: 0 });
  });

  it('takes updates by long polling when configured', async () => {
    gateway = await startTestGateway({ telegram: 'polling' });
    gateway.telegram!.queueUpdate({
      update_id: 1,
      message: { message_id: 3, date: 0, chat: { id: 99, type: 'private', first_name: 'Bo' }, text: 'polled' },
    } as never);
    await until(() => gateway!.telegram!.sent.length === 1);
    expect(gateway.telegram!.sent[0]).toMatchObject({ chatId: '99', text: 'polled', threadId: undefined });
  });
});

describe('telegram redeliveries, channel posts and anchors', () => {
  it('handles a redelivered update once', async () => {
    gateway = await startTestGateway({ telegram: true });
    for (let i = 0; i < 3; i++) expect(await telegram.inbound(gateway, { chatId: '-1005', text: 'once', messageId: 9 })).toBe(200);
    await until(() => gateway!.telegram!.sent.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(gateway.telegram!.sent).toHaveLength(1);
  });

  it('takes channel posts by long polling, as by webhook', async () => {
    gateway = await startTestGateway({ telegram: 'polling' });
    gateway.telegram!.queueUpdate({
      update_id: 2,
      channel_post: { message_id: 4, date: 0, chat: { id: -1009, type: 'channel', title: 'News' }, text: 'posted' },
    } as never);
    await until(() => gateway!.telegram!.sent.length === 1, 5_000);
    expect(gateway.telegram!.sent[0]).toMatchObject({ chatId: '-1009', text: 'posted' });
  });

  it('anchors only a reply, and only in its own chat', async () => {
    gateway = await startTestGateway({ telegram: true });
    const origin = { v: 1 as const, session: { platform: 'telegram', chatType: 'group' as const, chatId: '-1001', sessionId: 'tl_s' } };
    const { router: deliveries } = gateway.running.gateway;
    await deliveries.deliver({ id: 'n/1', kind: 'notification', text: 'note', inReplyTo: '42', origin });
    await deliveries.deliver({
      id: 'r/1',
      kind: 'reply',
      text: 'elsewhere',
      inReplyTo: '42',
      origin,
      target: { to: 'explicit', destination: { platform: 'telegram', chatId: '-1002' } },
    });
    await deliveries.deliver({ id: 'r/2', kind: 'reply', text: 'here', inReplyTo: '42', origin });
    await until(() => gateway!.telegram!.sent.length === 3);
    expect(gateway.telegram!.sent.map((s) => [s.text, s.replyTo])).toEqual([
      ['note', undefined],
      ['elsewhere', undefined],
      ['here', '42'],
    ]);
  });
});

describe('slack specifics', () => {
  it('takes a broadcast thread reply and a file with text as a person\'s message, not edits or bots', async () => {
    const { slackInbound } = await import('../../src/platforms/slack/slack-inbound.js');
    const event = { type: 'message', channel: 'C5', channel_type: 'channel', ts: '1.5', thread_ts: '1.1', text: 'also to channel', user: 'U1' };
    expect(slackInbound({ ...event, subtype: 'thread_broadcast' }, false)?.text).toBe('also to channel');
    expect(slackInbound({ ...event, subtype: 'file_share' }, false)?.text).toBe('also to channel');
    expect(slackInbound({ ...event, subtype: 'message_changed' }, false)).toBeUndefined();
    expect(slackInbound({ ...event, subtype: 'thread_broadcast', bot_id: 'B1' }, false)).toBeUndefined();
  });

  it('retries Slack\'s own trouble (internal_error), and delivers once', async () => {
    gateway = await startTestGateway({ slack: true, env: { THREADLINE_DELIVERY_BACKOFF_MS: '20' } });
    gateway.slack!.refuseNext('internal_error');
    await slack.inbound(gateway, { chatId: 'C4', text: 'again', messageId: 13 });
    await until(() => gateway!.slack!.sent.length === 1);
    expect(gateway.running.gateway.outbox.stats()).toMatchObject({ retried: 1, failed: 0 });
  });

  it('answers url_verification with the challenge', async () => {
    gateway = await startTestGateway({ slack: true });
    const answer = await gateway.sendSlack({ type: 'url_verification', challenge: 'abc' });
    expect(answer).toMatchObject({ status: 200, body: { challenge: 'abc' } });
  });

  it('refuses a signature outside the 5-minute replay window', async () => {
    gateway = await startTestGateway({ slack: true });
    const { slackSignature } = await import('../../src/platforms/slack/slack-signature.js');
    const raw = JSON.stringify({ type: 'url_verification', challenge: 'x' });
    const old = String(Math.floor(Date.now() / 1000) - 301);
    const response = await fetch(`${gateway.url}/v1/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': old, 'x-slack-signature': slackSignature('slack-signing-secret', old, raw) },
      body: raw,
    });
    expect(response.status).toBe(401);
  });

  it('handles a redelivered event once', async () => {
    gateway = await startTestGateway({ slack: true });
    for (let i = 0; i < 3; i++) await slack.inbound(gateway, { chatId: 'C1', text: 'once', messageId: 9 });
    await until(() => gateway!.slack!.sent.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(gateway.slack!.sent).toHaveLength(1);
  });

  it('handles a redelivery of an event it refused with 429, instead of dropping it as a duplicate', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const agent: Agent = {
      handle: async (turn) => {
        if (turn.text === 'hold') await gate;
        await turn.reply(turn.text);
      },
    };
    gateway = await startTestGateway({ slack: true, agent, env: { THREADLINE_QUEUE_CAPACITY: '1', THREADLINE_CONCURRENCY: '1' } });
    const g = gateway;
    await g.send({ chat_id: 'busy', text: 'hold' });
    expect(await slack.inbound(g, { chatId: 'C9', text: 'retry me', messageId: 21 })).toBe(429);
    release();
    await until(() => g.running.gateway.queued === 0);
    expect(await slack.inbound(g, { chatId: 'C9', text: 'retry me', messageId: 21 })).toBe(200);
    await until(() => g.slack!.sent.length === 1);
    expect(g.slack!.sent[0]).toMatchObject({ channel: 'C9', text: 'retry me' });
  });

  it('gives an app_mention the session of the message events of its channel', async () => {
    const { slackInbound } = await import('../../src/platforms/slack/slack-inbound.js');
    const types = new Map<string, 'group'>([['C77', 'group']]);
    const mention = slackInbound({ type: 'app_mention', channel: 'C77', ts: '1.2', text: 'hi' }, false, (c) => types.get(c));
    expect(mention?.session.chatType).toBe('group');
    expect(slackInbound({ type: 'app_mention', channel: 'D1', ts: '1.3', text: 'hi' }, false)?.session.chatType).toBe('dm');
  });

  it('starts a thread of its own for a top-level message when configured', async () => {
    gateway = await startTestGateway({ slack: true, env: { THREADLINE_SLACK_THREAD_TOP_LEVEL: '1' } });
    await slack.inbound(gateway, { chatId: 'C2', text: 'top', messageId: 11 });
    await until(() => gateway!.slack!.sent.length === 1);
    expect(gateway.slack!.sent[0]).toMatchObject({ channel: 'C2', threadTs: '1800000000.000011' });
  });

  it('does not retry a platform refusal', async () => {
    gateway = await startTestGateway({ slack: true });
    gateway.slack!.refuseNext('channel_not_found');
    await slack.inbound(gateway, { chatId: 'C3', text: 'x', messageId: 12 });
    await until(() => gateway!.running.gateway.outbox.stats().failed === 1);
    expect(gateway.slack!.sent).toEqual([]);
  });
});
