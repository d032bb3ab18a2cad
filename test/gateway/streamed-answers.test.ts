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
const FAST = { THREADLINE_DRAFT_INTERVAL_MS: '1', THREADLINE_TYPING_INTERVAL_MS: '50' };

/** A gate a stream waits on before one of its pieces. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** A Telegram update from a private chat (with a topic when `threadId` is given). */
function privateUpdate(chatId: number, messageId: number, text: string, threadId?: number): object {
  return {
    update_id: messageId,
    message: {
      message_id: messageId,
      date: 0,
      chat: { id: chatId, type: 'private', first_name: 'Ann' },
      from: { id: chatId, is_bot: false, first_name: 'Ann' },
      text,
      ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true }),
    },
  };
}

/** The model's first answer: "Let me look…" with a call; after the tool's result, `final` streamed. */
function lookThenAnswer(final: (request: FakeChatRequest) => ReturnType<typeof FakeOpenAI.streamed> | Promise<ReturnType<typeof FakeOpenAI.streamed>>) {
  return (request: FakeChatRequest) =>
    request.body.messages.at(-1)?.role === 'tool'
      ? final(request)
      : FakeOpenAI.streamed(FakeOpenAI.toolCalls([{ name: 'list_schedules', arguments: {} }], { content: 'Let me look…' }));
}

describe('streamed answers on Telegram', () => {
  it('drafts the answer in its own private chat and topic, says the interim text before the tool runs, and sends the final text once', async () => {
    let g!: TestGateway;
    model = await FakeOpenAI.start(
      lookThenAnswer(async () => {
        // The tool ran only after the interim text went out.
        await until(() => g.telegram!.sent.some((sent) => sent.text === 'Let me look…'));
        return FakeOpenAI.streamed(FakeOpenAI.text('You have no reminders.'), {
          pieces: ['You have ', 'no ', 'reminders.'],
          // Each piece waits until the one before was drafted.
          before: (index) => (index === 0 ? undefined : until(() => g.telegram!.drafts.some((d) => d.text.endsWith(['You have ', 'no ', 'reminders.'][index - 1]!)))),
        });
      }),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram(privateUpdate(501, 7, 'any reminders?', 9));
    await until(() => g.telegram!.sent.length === 2);
    const { drafts, sent, calls } = g.telegram!;
    expect(sent.map((s) => [s.chatId, s.threadId, s.text])).toEqual([
      ['501', '9', 'Let me look…'],
      ['501', '9', 'You have no reminders.'],
    ]);
    expect(drafts.length).toBeGreaterThanOrEqual(3);
    expect(drafts.every((d) => d.chatId === '501' && d.threadId === '9')).toBe(true);
    expect(drafts.map((d) => d.text)).toEqual(expect.arrayContaining(['You have ', 'You have no ', 'You have no reminders.']));
    // Typing first; no draft of an answer after that answer was sent.
    expect(calls[0]!.method).toBe('sendChatAction');
    const finalAt = calls.findIndex((c) => c.method === 'sendMessage' && c.text === 'You have no reminders.');
    expect(calls.slice(finalAt + 1).filter((c) => c.method === 'sendMessageDraft')).toEqual([]);
    // The final answer's drafts share one id, which the interim text's drafts do not use.
    const finalIds = new Set(drafts.filter((d) => d.text.startsWith('You have')).map((d) => d.draftId));
    expect(finalIds.size).toBe(1);
    expect(drafts.filter((d) => !d.text.startsWith('You have')).every((d) => !finalIds.has(d.draftId))).toBe(true);
  });

  it('streams two concurrent turns of two chats each into its own chat', async () => {
    const both = gate();
    let g!: TestGateway;
    model = await FakeOpenAI.start((request) => {
      const who = FakeOpenAI.lastUserText(request) === 'from A' ? 'A' : 'B';
      const pieces = [`${who}1 `, `${who}2 `, `${who}3`];
      return FakeOpenAI.streamed(FakeOpenAI.text(pieces.join('')), {
        pieces,
        // Both hold after their first piece until both have drafted it: the streams interleave.
        before: (index) => (index === 1 ? both.wait : undefined),
      });
    });
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await Promise.all([g.sendTelegram(privateUpdate(601, 1, 'from A')), g.sendTelegram(privateUpdate(602, 2, 'from B'))]);
    await until(() => ['601', '602'].every((chat) => g.telegram!.drafts.some((d) => d.chatId === chat)));
    both.open();
    await until(() => g.telegram!.sent.length === 2);
    const { drafts, sent } = g.telegram!;
    expect(drafts.filter((d) => d.chatId === '601').every((d) => d.text.startsWith('A1'))).toBe(true);
    expect(drafts.filter((d) => d.chatId === '602').every((d) => d.text.startsWith('B1'))).toBe(true);
    expect(Object.fromEntries(sent.map((s) => [s.chatId, s.text]))).toEqual({ '601': 'A1 A2 A3', '602': 'B1 B2 B3' });
  });

  it('/stop mid-stream stops the stream; no draft or answer follows', async () => {
    const never = gate();
    let g!: TestGateway;
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text('one two three'), { pieces: ['one ', 'two ', 'three'], before: (index) => (index === 1 ? never.wait : undefined) }),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram(privateUpdate(701, 1, 'count'));
    await until(() => g.telegram!.drafts.length === 1);
    await g.sendTelegram(privateUpdate(701, 2, '/stop'));
    await until(() => g.telegram!.sent.length === 1 && model!.streams.abandoned === 1);
    never.open();
    // The gateway's own /stop answer is the only message; the model's answer never came.
    expect(g.telegram!.sent.map((s) => s.text)).toEqual([STOPPED]);
    expect(g.telegram!.drafts.map((d) => d.text)).toEqual(['one ']);
    expect(model.streams.finished).toBe(0);
  });

  it('drafts nothing in a group, where Telegram has no drafts, and still answers once', async () => {
    let g!: TestGateway;
    model = await FakeOpenAI.start(() => FakeOpenAI.streamed(FakeOpenAI.text('hello group')));
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendTelegram({
      update_id: 1,
      message: { message_id: 1, date: 0, chat: { id: -1001, type: 'supergroup', title: 'T', is_forum: true }, from: { id: 7, is_bot: false, first_name: 'Ann' }, text: 'hi', message_thread_id: 5, is_topic_message: true },
    });
    await until(() => g.telegram!.sent.length === 1);
    expect(g.telegram!.sent[0]).toMatchObject({ chatId: '-1001', threadId: '5', text: 'hello group' });
    expect(g.telegram!.calls.filter((c) => c.method === 'sendMessageDraft')).toEqual([]);
  });

  it('skips drafts while Telegram asks to wait (429 retry_after), and answers once', async () => {
    let g!: TestGateway;
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text('a b c'), {
        pieces: ['a ', 'b ', 'c'],
        // Piece 2 waits until the draft of piece 1 was refused; piece 3 until piece 2 arrived.
        before: (index) => (index === 1 ? until(() => g.telegram!.calls.some((c) => c.method === 'sendMessageDraft')) : undefined),
      }),
    );
    g = await startTestGateway({ telegram: true, llmBaseUrl: model.baseUrl, env: FAST });
    g.telegram!.failNext(1, 429, 30, 'sendMessageDraft');
    await g.sendTelegram(privateUpdate(801, 1, 'abc'));
    await until(() => g.telegram!.sent.length === 1);
    expect(g.telegram!.sent[0]!.text).toBe('a b c');
    // The refused one was the only draft asked for: the 30 s wait had not passed.
    expect(g.telegram!.calls.filter((c) => c.method === 'sendMessageDraft')).toHaveLength(1);
    expect(g.telegram!.drafts).toEqual([]);
  });
});

describe('streamed answers on Slack', () => {
  it('says the interim text and the final text in the thread, each once, with typing in the thread', async () => {
    let g!: TestGateway;
    model = await FakeOpenAI.start(
      lookThenAnswer(async () => {
        await until(() => g.slack!.sent.some((sent) => sent.text === 'Let me look…'));
        return FakeOpenAI.streamed(FakeOpenAI.text('Nothing scheduled.'));
      }),
    );
    g = await startTestGateway({ slack: true, llmBaseUrl: model.baseUrl, env: FAST });
    await g.sendSlack({
      type: 'event_callback',
      event_id: 'Ev1',
      event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text: 'any?', ts: '1800000000.000001', thread_ts: '1700000000.000001' },
    });
    await until(() => g.slack!.sent.length === 2);
    expect(g.slack!.sent).toEqual([
      { channel: 'C1', threadTs: '1700000000.000001', text: 'Let me look…' },
      { channel: 'C1', threadTs: '1700000000.000001', text: 'Nothing scheduled.' },
    ]);
    expect(g.slack!.calls[0]).toBe('assistant.threads.setStatus');
    expect(g.slack!.statuses.every((s) => s.channel === 'C1' && s.threadTs === '1700000000.000001')).toBe(true);
  });
});

describe('streamed answers on the webhook', () => {
  it('delivers the interim text and the final text as two replies, in order, nothing else', async () => {
    let g!: TestGateway;
    model = await FakeOpenAI.start(
      lookThenAnswer(async () => {
        await g.receiver.waitFor(1);
        return FakeOpenAI.streamed(FakeOpenAI.text('Nothing scheduled.'));
      }),
    );
    g = await startTestGateway({ llmBaseUrl: model.baseUrl, env: FAST });
    const accepted = await g.send({ chat_id: 'w1', thread_id: 'th', text: 'any?' });
    const received = await g.receiver.waitFor(2);
    expect(received.map((d) => [d.body.chat_id, d.body.thread_id, d.body.kind, d.body.text, d.body.idempotency_key])).toEqual([
      ['w1', 'th', 'reply', 'Let me look…', expect.stringMatching(new RegExp(`^${String(accepted.body['message_id'])}/1-`))],
      ['w1', 'th', 'reply', 'Nothing scheduled.', expect.stringMatching(new RegExp(`^${String(accepted.body['message_id'])}/2-`))],
    ]);
    await until(() => g.running.gateway.outbox.stats().delivered === 2);
    expect(g.receiver.received).toHaveLength(2);
  });
});
