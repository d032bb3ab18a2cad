import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeOpenAI, type ReceivedDelivery, type TestGateway } from '../../src/testing/index.js';
import { names } from '../../src/session/index.js';
import { useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();
const ADMIN_TERMINAL = { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*' };

/** Sends a webhook message and returns the deliveries that arrive for it (the first `count` new ones). */
async function ask(g: TestGateway, text: string, chat = 'ops', thread: string | undefined = 'deploys', count = 1): Promise<ReceivedDelivery[]> {
  const before = g.receiver.unique().size;
  const answer = await g.send({ chat_id: chat, ...(thread === undefined ? {} : { thread_id: thread }), chat_type: 'group', text });
  expect(answer.status).toBe(202);
  return (await g.receiver.waitFor(before + count)).slice(before);
}

async function reply(g: TestGateway, text: string, chat?: string, thread?: string): Promise<string> {
  const [delivery] = await ask(g, text, chat, thread);
  return delivery!.body.text;
}

describe('commands through the webhook', () => {
  it('/help lists the commands; an unknown command says so', async () => {
    const g = await start();
    expect(await reply(g, '/help')).toContain('/remind <n>s|m|h|d <text>');
    expect(await reply(g, '/frobnicate')).toBe('Unknown command /frobnicate. /help lists the commands.');
  });

  it('admin commands are refused to non-admins, and the terminal is off unless enabled', async () => {
    const nobody = await start({ env: { THREADLINE_TERMINAL: '1' } });
    expect(await reply(nobody, '/run echo hi')).toMatch(/is for admins/);
    expect(await reply(nobody, '/cron "0 9 * * *" standup')).toMatch(/is for admins/);
    expect(await reply(nobody, '/send webhook:other hi')).toMatch(/is for admins/);
    const off = await start({ env: { THREADLINE_ADMINS: '*' } });
    expect(await reply(off, '/run echo hi')).toMatch(/THREADLINE_TERMINAL=1/);
  });

  it('/run reports the end to the chat and thread that started it, as a new trace linked to the message, with execute_tool under agent.turn', async () => {
    const g = await start({ webhookToken: true, env: ADMIN_TERMINAL });
    const answer = await g.send({ chat_id: 'ops', thread_id: 'deploys', chat_type: 'group', text: '/run echo built-it' });
    const [ack, done] = await g.receiver.waitFor(2);
    expect(ack!.body).toMatchObject({ kind: 'reply', chat_id: 'ops', thread_id: 'deploys' });
    expect(done!.body).toMatchObject({ kind: 'notification', chat_id: 'ops', thread_id: 'deploys' });
    expect(done!.body.text).toContain('built-it');
    const traceId = String(answer.body['trace_id']);
    const spans = await g.waitForSpans(traceId, ['gateway.message', 'agent.turn', 'execute_tool terminal']);
    const turn = spans.find((span) => span.name === 'agent.turn')!;
    const tool = spans.find((span) => span.name === 'execute_tool terminal')!;
    expect(tool.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'terminal', [names.CHAT_THREAD_ID]: 'deploys' });
    // The notification's trace: its root links to the tool call that spawned the command.
    const notify = (await g.waitForSpans(done!.body.trace_id, ['gateway.deliver'])).find((span) => span.links.length > 0)!;
    expect(notify.links[0]!.context.spanId).toBe(tool.spanContext().spanId);
    expect(notify.attributes[names.CHAT_THREAD_ID]).toBe('deploys');
  });

  it('/jobs lists this chat\'s commands and /kill stops one; another chat cannot', async () => {
    const g = await start({ webhookToken: true, env: ADMIN_TERMINAL });
    const started = await reply(g, '/run sleep 600');
    const id = /\b(p[0-9a-z]+)\b/.exec(started)?.[1];
    expect(id, started).toBeDefined();
    expect(await reply(g, '/jobs')).toContain(id!);
    expect(await reply(g, `/kill ${id!}`, 'elsewhere', undefined)).toMatch(/no process/i);
    const deliveries = await ask(g, `/kill ${id!}`, 'ops', 'deploys', 2);
    expect(deliveries.map((d) => d.body.kind).sort()).toEqual(['notification', 'reply']);
    expect(deliveries.find((d) => d.body.kind === 'notification')!.body).toMatchObject({ chat_id: 'ops', thread_id: 'deploys' });
  });

  it('/run --every reports progress on the clock until the command ends; an absurd interval is refused', async () => {
    const g = await start({ webhookToken: true, env: ADMIN_TERMINAL, clock: 'manual' });
    expect(await reply(g, '/run --every 1 sleep 600')).toMatch(/30/);
    const started = await reply(g, '/run --every 30 sleep 600');
    const id = /\b(p[0-9a-z]+)\b/.exec(started)![1]!;
    await g.advanceTime(30_000);
    const [progress] = await g.receiver.waitFor(3).then((all) => all.slice(2));
    expect(progress!.body).toMatchObject({ kind: 'notification', chat_id: 'ops', thread_id: 'deploys' });
    expect(progress!.body.text).toContain(id);
    await ask(g, `/kill ${id}`, 'ops', 'deploys', 2);
  });

  it('/remind delivers its text to the origin when the clock gets there, not before; /cron list and rm', async () => {
    const g = await start({ env: { THREADLINE_ADMINS: '*' }, clock: 'manual' });
    expect(await reply(g, '/remind 10m stand up')).toMatch(/c[0-9a-z]+/);
    const created = await reply(g, '/cron "0 9 * * *" daily digest');
    const cronId = /\b(c[0-9a-z]+)\b/.exec(created)![1]!;
    expect(await reply(g, '/cron list')).toContain(cronId);
    await g.advanceTime(9 * 60_000);
    expect((await g.deliveries()).filter((d) => d.kind === 'cron')).toEqual([]);
    await g.advanceTime(60_000);
    const [reminder] = (await g.receiver.waitFor(4)).slice(3);
    expect(reminder!.body).toMatchObject({ kind: 'cron', chat_id: 'ops', thread_id: 'deploys' });
    expect(reminder!.body.text).toContain('stand up');
    expect(await reply(g, `/cron rm ${cronId}`)).toContain(cronId);
    expect(await reply(g, '/cron list')).not.toContain(cronId);
  });

  it('bad input gets a clear answer: a bad cron expression, a bad delay, a target that does not parse', async () => {
    const g = await start({ env: { THREADLINE_ADMINS: '*' } });
    expect(await reply(g, '/cron "not a cron" x')).toMatch(/^\/cron: /);
    expect(await reply(g, '/cron "* * * * * *" x')).toMatch(/minute/);
    expect(await reply(g, '/remind soon x')).toMatch(/^\/remind: /);
    expect(await reply(g, '/send nowhere x')).toMatch(/TL_TARGET_INVALID|not origin, home/);
    expect(await reply(g, '/send telegram:1 x')).toMatch(/No platform "telegram"/);
  });

  it('/send delivers to another chat and thread, kind send, and mirrors the text into its history with the source', async () => {
    const g = await start({ env: { THREADLINE_ADMINS: '*' } });
    const deliveries = await ask(g, '/send webhook:other:t9 deploy done', 'ops', 'deploys', 2);
    const sent = deliveries.find((d) => d.body.kind === 'send')!;
    expect(sent.body).toMatchObject({ chat_id: 'other', thread_id: 't9', text: 'deploy done' });
    const history = await g.running.store.history.recent('any-session-of-that-thread', { platform: 'webhook', chatId: 'other', threadId: 't9' }, 10);
    expect(history).toContainEqual(expect.objectContaining({ text: 'deploy done', source: 'webhook' }));
  });

  it('/tts sends an Ogg/Opus voice note as the webhook attachment', async () => {
    const g = await start();
    const [voice] = await ask(g, '/tts the build is green');
    const attachment = (voice!.body as { attachment?: { content_type: string; data_base64: string } }).attachment;
    expect(attachment?.content_type).toBe('audio/ogg');
    expect(Buffer.from(attachment!.data_base64, 'base64').subarray(0, 4).toString()).toBe('OggS');
  });

  it('/skills lists the skills of this platform and shows a file that does not parse', async () => {
    const g = await start();
    const dir = join(g.dataDir, 'skills');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'deploy.md'), '---\ndescription: How we deploy\nplatforms: [webhook]\n---\nUse the pipeline.\n');
    writeFileSync(join(dir, 'slack-only.md'), '---\ndescription: Slack etiquette\nplatforms: [slack]\n---\nThreads.\n');
    writeFileSync(join(dir, 'broken.md'), '---\ndescription: [unclosed\n---\n');
    g.running.toolbox.skills.reload();
    const text = await reply(g, '/skills');
    expect(text).toContain('deploy');
    expect(text).not.toContain('Slack etiquette');
    expect(text).toContain('broken.md');
  });
});

describe('commands on Telegram and Slack', () => {
  it('a reminder set in a Telegram forum topic comes back to that topic', async () => {
    const g = await start({ telegram: true, clock: 'manual' });
    const answer = await g.sendTelegram({
      update_id: 1,
      message: {
        message_id: 10,
        message_thread_id: 77,
        is_topic_message: true,
        date: 0,
        chat: { id: -100123, type: 'supergroup', title: 'T', is_forum: true },
        from: { id: 7, is_bot: false, first_name: 'A' },
        text: '/remind 1m topic reminder',
      },
    });
    expect(answer.status).toBe(200);
    await waitUntil(() => g.telegram!.sent.length >= 1);
    await g.advanceTime(60_000);
    await waitUntil(() => g.telegram!.sent.length >= 2);
    expect(g.telegram!.sent[1]).toMatchObject({ chatId: '-100123', threadId: '77' });
    expect(g.telegram!.sent[1]!.text).toContain('topic reminder');
  });

  it('a reminder set in a Slack thread comes back to that thread; /tts uploads a file there', async () => {
    const g = await start({ slack: true, clock: 'manual' });
    const event = (text: string, ts: string) => ({
      type: 'event_callback',
      event_id: `Ev${ts}`,
      event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text, ts, thread_ts: '1700000000.000100' },
    });
    expect((await g.sendSlack(event('/remind 1m slack reminder', '1700000001.000100'))).status).toBe(200);
    await waitUntil(() => g.slack!.sent.length >= 1);
    await g.advanceTime(60_000);
    await waitUntil(() => g.slack!.sent.length >= 2);
    expect(g.slack!.sent[1]).toMatchObject({ channel: 'C1', threadTs: '1700000000.000100' });
    expect((await g.sendSlack(event('/tts hello', '1700000002.000100'))).status).toBe(200);
    await waitUntil(() => g.slack!.files.length >= 1);
    expect(g.slack!.files[0]).toMatchObject({ channel: 'C1', threadTs: '1700000000.000100' });
  });
});

describe('the LLM agent through the gateway', () => {
  it('a background command the model starts reports to the thread it was asked from', async () => {
    const model = await FakeOpenAI.start(({ body }) => {
      const last = body.messages.at(-1);
      if (last?.role === 'tool') return FakeOpenAI.text('Started it; I will tell you when it ends.');
      return FakeOpenAI.toolCalls([{ name: 'terminal', arguments: { command: 'echo model-made-this', background: true, notify_on_complete: true } }]);
    });
    try {
      const g = await start({ webhookToken: true, env: ADMIN_TERMINAL, llmBaseUrl: model.baseUrl });
      const answer = await g.send({ chat_id: 'ops', thread_id: 'thread-b', chat_type: 'group', text: 'please build it' });
      const deliveries = await g.receiver.waitFor(2);
      const notification = deliveries.find((d) => d.body.kind === 'notification')!;
      expect(notification.body).toMatchObject({ chat_id: 'ops', thread_id: 'thread-b' });
      expect(notification.body.text).toContain('model-made-this');
      const spans = await g.waitForSpans(String(answer.body['trace_id']), ['execute_tool terminal']);
      expect(spans.map((span) => span.name)).toContain(`chat ${'gpt-4o-mini'}`);
      expect(model.requests[0]!.headers['traceparent']).toBeDefined();
    } finally {
      await model.close();
    }
  });
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
