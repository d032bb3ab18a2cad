import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, type FakeChatRequest } from '../../src/testing/fake-openai.js';
import type { TestGateway } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

/** The gateway's answer to /stop in a chat with nothing else running. */
const STOPPED = 'Stopped the turn this chat was running, if there was one. Nothing else runs here.';

const startTestGateway = useTestGateways();
let model: FakeOpenAI | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** Small throttles, so a test waits milliseconds, not seconds. */
const FAST = {
  THREADLINE_TELEGRAM_GROUP_EDIT_INTERVAL_MS: '1',
  THREADLINE_TELEGRAM_EDIT_INTERVAL_MS: '1',
  THREADLINE_SLACK_EDIT_INTERVAL_MS: '1',
  THREADLINE_TYPING_INTERVAL_MS: '50',
};

const INTERIM = 'Let me look at your schedules first…';
/** The first piece is long enough for a live message (LIVE_FIRST_CHARS). */
const FINAL = ['You have no reminders and ', 'no cron jobs ', 'in this topic.'];

/** A Telegram update from a forum topic of a group. */
function topicUpdate(chatId: number, messageId: number, text: string, threadId: number): object {
  return {
    update_id: messageId,
    message: {
      message_id: messageId,
      date: 0,
      chat: { id: chatId, type: 'supergroup', title: 'Team', is_forum: true },
      from: { id: 7, is_bot: false, first_name: 'Ann' },
      text,
      message_thread_id: threadId,
      is_topic_message: true,
    },
  };
}

/**
 * The model says INTERIM with a call; after the tool's result, it streams `pieces`, each
 * piece waiting until `shown(text so far)` holds (the platform shows the text before it).
 */
function lookThenStream(pieces: readonly string[], shown: (text: string) => boolean | Promise<boolean>, beforeFinal?: () => Promise<void>) {
  return async (request: FakeChatRequest) => {
    if (request.body.messages.at(-1)?.role !== 'tool') {
      return FakeOpenAI.streamed(FakeOpenAI.toolCalls([{ name: 'list_schedules', arguments: {} }], { content: INTERIM }));
    }
    return FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), {
      pieces,
      before: async (index) => {
        if (index > 0) await until(() => shown(pieces.slice(0, index).join('')));
        if (index === pieces.length) await beforeFinal?.();
      },
    });
  };
}

describe('live answers on Telegram groups', () => {
  it('edits one live message per answer in the topic; the final delivery replaces it, once', async () => {
    let g!: TestGateway;
    const inTopic = () => g.telegram!.messagesIn('-1001', '5');
    model = await FakeOpenAI.start(lookThenStream(FINAL, (text) => inTopic().some((m) => m.text === text)));
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram(topicUpdate(-1001, 40, 'any reminders?', 5));
    await until(() => inTopic().map((m) => m.text).join('|') === `${INTERIM}|${FINAL.join('')}` && g.running.gateway.outbox.stats().delivered === 2);
    // Two messages in all, in the topic, each quoting the question: the live ones, now final.
    expect(g.telegram!.sent.map((s) => [s.chatId, s.threadId, s.replyTo])).toEqual([
      ['-1001', '5', '40'],
      ['-1001', '5', '40'],
    ]);
    expect(g.telegram!.messagesIn('-1001')).toHaveLength(2);
    // The answer grew by edits of its live message: each text shown once, in order, the final one last.
    const second = inTopic()[1]!.messageId;
    expect(g.telegram!.edits.filter((e) => e.messageId === second).map((e) => e.text)).toEqual([FINAL[0]! + FINAL[1]!, FINAL.join('')]);
    expect(g.telegram!.edits.every((e) => e.chatId === '-1001')).toBe(true);
  });

  it('sends the final text as a new message when the live message can no longer be edited', async () => {
    let g!: TestGateway;
    const inTopic = () => g.telegram!.messagesIn('-1002', '6');
    model = await FakeOpenAI.start(
      lookThenStream(
        FINAL,
        (text) => inTopic().some((m) => m.text === text),
        async () => {
          // Someone deletes the live answer before it is final.
          const live = inTopic().find((m) => m.text.startsWith('You have'))!;
          g.telegram!.deleteMessage(live.messageId);
        },
      ),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram(topicUpdate(-1002, 41, 'any reminders?', 6));
    await until(() => g.running.gateway.outbox.stats().delivered === 2);
    expect(inTopic().map((m) => m.text)).toEqual([INTERIM, FINAL.join('')]);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ failed: 0 });
  });

  it('skips edits while Telegram asks to wait (429), and the final text still replaces the live message', async () => {
    let g!: TestGateway;
    const inTopic = () => g.telegram!.messagesIn('-1003', '7');
    const pieces = ['This answer is long enough ', 'to be shown live, ', 'then rate limited.'];
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), {
        pieces,
        before: async (index) => {
          if (index === 1) await until(() => inTopic().length === 1);
          // After the refused edit, the rest arrives while the wait is on.
          if (index === 2) await until(() => g.telegram!.calls.some((c) => c.method === 'editMessageText'));
        },
      }),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    g.telegram!.failNext(1, 429, 30, 'editMessageText');
    await g.sendTelegram(topicUpdate(-1003, 42, 'go', 7));
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(inTopic().map((m) => m.text)).toEqual([pieces.join('')]);
    // The refused live edit, then the final delivery's: none in between.
    expect(g.telegram!.calls.filter((c) => c.method === 'editMessageText')).toHaveLength(2);
  });

  it('streams two concurrent turns of two groups each into its own live message', async () => {
    let g!: TestGateway;
    const both = { open: () => {}, wait: Promise.resolve() };
    both.wait = new Promise<void>((resolve) => (both.open = resolve));
    model = await FakeOpenAI.start((request) => {
      const who = FakeOpenAI.lastUserText(request) === 'from A' ? 'A' : 'B';
      const pieces = [`${who}: the first part of it, `, `${who}: the second, `, `${who}: the end.`];
      return FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), { pieces, before: (index) => (index === 1 ? both.wait : undefined) });
    });
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await Promise.all([g.sendTelegram(topicUpdate(-2001, 1, 'from A', 3)), g.sendTelegram(topicUpdate(-2002, 2, 'from B', 4))]);
    await until(() => g.telegram!.messagesIn('-2001').length === 1 && g.telegram!.messagesIn('-2002').length === 1);
    both.open();
    await until(() => g.running.gateway.outbox.stats().delivered === 2);
    expect(g.telegram!.messagesIn('-2001').map((m) => [m.threadId, m.text])).toEqual([['3', 'A: the first part of it, A: the second, A: the end.']]);
    expect(g.telegram!.messagesIn('-2002').map((m) => [m.threadId, m.text])).toEqual([['4', 'B: the first part of it, B: the second, B: the end.']]);
    for (const edit of g.telegram!.edits) expect(edit.text.startsWith(edit.chatId === '-2001' ? 'A:' : 'B:')).toBe(true);
  });

  it('/stop mid-stream: no edit and no answer follow', async () => {
    let g!: TestGateway;
    let release!: () => void;
    const never = new Promise<void>((resolve) => (release = resolve));
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text('A long enough first part, and then more.'), {
        pieces: ['A long enough first part, ', 'and then more.'],
        before: (index) => (index === 1 ? never : undefined),
      }),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram(topicUpdate(-1004, 50, 'go', 8));
    await until(() => g.telegram!.messagesIn('-1004').length === 1);
    await g.sendTelegram(topicUpdate(-1004, 51, '/stop', 8));
    await until(() => g.telegram!.sent.some((s) => s.text === STOPPED) && model!.streams.abandoned === 1);
    release();
    expect(g.telegram!.edits).toEqual([]);
    expect(g.telegram!.messagesIn('-1004').map((m) => m.text)).toEqual(['A long enough first part, ', STOPPED]);
  });
});

describe('live answers on Slack', () => {
  it('posts the answer in the thread and updates it; the final text replaces it, once', async () => {
    let g!: TestGateway;
    const inThread = () => g.slack!.messagesIn('C7', '1700000000.000007');
    model = await FakeOpenAI.start(lookThenStream(FINAL, (text) => inThread().some((m) => m.text === text)));
    g = await startTestGateway({ slack: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendSlack({
      type: 'event_callback',
      event_id: 'Ev7',
      event: { type: 'message', channel: 'C7', channel_type: 'channel', user: 'U1', text: 'any?', ts: '1800000000.000007', thread_ts: '1700000000.000007' },
    });
    await until(() => g.running.gateway.outbox.stats().delivered === 2);
    expect(inThread().map((m) => m.text)).toEqual([INTERIM, FINAL.join('')]);
    expect(g.slack!.messagesIn('C7')).toHaveLength(2);
    expect(g.slack!.updates.every((u) => u.channel === 'C7')).toBe(true);
    // Slack takes an update to the same text, so the final delivery's update may repeat the last live one.
    expect([...new Set(g.slack!.updates.map((u) => u.text))]).toEqual([INTERIM, FINAL[0]! + FINAL[1]!, FINAL.join('')]);
    expect(g.slack!.calls[0]).toBe('assistant.threads.setStatus');
  });

  it('streams two concurrent turns of two channels each into its own thread; /stop stops one, the other finishes', async () => {
    let g!: TestGateway;
    let release!: () => void;
    const bothLive = new Promise<void>((resolve) => (release = resolve));
    model = await FakeOpenAI.start((request) => {
      const who = FakeOpenAI.lastUserText(request) === 'from A' ? 'A' : 'B';
      const pieces = [`${who}: the first part of it, `, `${who}: the end.`];
      // B holds until both are live, and A never finishes: it is stopped.
      const hold = who === 'A' ? new Promise<void>(() => undefined) : bothLive;
      return FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), { pieces, before: (index) => (index === 1 ? hold : undefined) });
    });
    g = await startTestGateway({ slack: true, llmBaseUrl: model.baseUrl, env: FAST });
    const event = (channel: string, n: number, text: string) => ({
      type: 'event_callback',
      event_id: `Ev${n}`,
      event: { type: 'message', channel, channel_type: 'channel', user: 'U1', text, ts: `1800000000.00000${n}`, thread_ts: `1700000000.00000${n === 3 ? 1 : n}` },
    });
    await Promise.all([g.sendSlack(event('CA', 1, 'from A')), g.sendSlack(event('CB', 2, 'from B'))]);
    await until(() => g.slack!.messagesIn('CA').length === 1 && g.slack!.messagesIn('CB').length === 1);
    await g.sendSlack(event('CA', 3, '/stop'));
    await until(() => g.slack!.messagesIn('CA').some((m) => m.text === STOPPED) && model!.streams.abandoned === 1);
    release();
    await until(() => g.slack!.messagesIn('CB').some((m) => m.text === 'B: the first part of it, B: the end.') && g.running.gateway.outbox.stats().delivered === 2);
    expect(g.slack!.messagesIn('CA').map((m) => [m.threadTs, m.text])).toEqual([
      ['1700000000.000001', 'A: the first part of it, '],
      ['1700000000.000001', STOPPED],
    ]);
    expect(g.slack!.messagesIn('CB').map((m) => [m.threadTs, m.text])).toEqual([['1700000000.000002', 'B: the first part of it, B: the end.']]);
    for (const update of g.slack!.updates) expect(update.text.startsWith(update.channel === 'CA' ? 'A:' : 'B:')).toBe(true);
  });
});
