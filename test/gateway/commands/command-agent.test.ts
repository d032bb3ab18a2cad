import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/agent/agent.js';
import { commandOf } from '../../../src/gateway/commands/command.js';
import { CommandAgent } from '../../../src/gateway/commands/command-agent.js';
import type { TestGateway } from '../../../src/testing/index.js';
import { useTestGateways, webhookOrigin } from '../../helpers/gateway.js';

const startTestGateway = useTestGateways();
let gateway: TestGateway | undefined;

describe('commandOf', () => {
  it.each([
    ['/status', '/status'],
    ['  /STATUS please', '/status'],
    ['/status@threadline_bot', '/status'],
    ['/statusx', '/statusx'],
    ['status', undefined],
    ['a /status', undefined],
  ])('%j → %s', (text, command) => {
    expect(commandOf(text)).toBe(command);
  });
});

describe('CommandAgent through the gateway', () => {
  it('/status shows platform, chat, thread, session id and trace id', async () => {
    gateway = await startTestGateway();
    const answer = await gateway.send({ chat_id: 'c:1', thread_id: '42', chat_type: 'group', text: '/status' });
    const [reply] = await gateway.receiver.waitFor(1);
    expect(reply!.body.text).toBe(
      [
        'platform: webhook',
        'chat: c:1 (group)',
        'thread: 42',
        `session: ${String(answer.body['session_id'])}`,
        `trace: ${String(answer.body['trace_id'])}`,
      ].join('\n'),
    );
  });

  it('/sethome makes the chat the home channel of home deliveries', async () => {
    // Admin-only; the test gateway's webhook has no token, so only "*" names its senders admins.
    gateway = await startTestGateway({ env: { THREADLINE_ADMINS: '*' } });
    await gateway.send({ chat_id: 'home-chat', thread_id: 'general', text: '/sethome' });
    await gateway.receiver.waitFor(1);
    const answer = await gateway.send({ chat_id: 'other', text: 'hello' });
    await gateway.receiver.waitFor(2);
    await gateway.running.gateway.router.deliver({
      id: 'cron-1',
      kind: 'cron',
      text: 'daily digest',
      target: { to: 'home' },
      origin: webhookOrigin('other', answer.body['session_id']),
    });
    const digest = (await gateway.receiver.waitFor(3)).find((delivery) => delivery.body.kind === 'cron')!;
    expect(digest.body).toMatchObject({ chat_id: 'home-chat', thread_id: 'general', text: 'daily digest' });
  });

  it('/new starts a new conversation: later messages get a new session id', async () => {
    gateway = await startTestGateway();
    const before = await gateway.send({ chat_id: 'c', text: 'one' });
    const again = await gateway.send({ chat_id: 'c', text: 'two' });
    expect(again.body['session_id']).toBe(before.body['session_id']);
    await gateway.send({ chat_id: 'c', text: '/new' });
    await gateway.receiver.waitFor(3);
    const after = await gateway.send({ chat_id: 'c', text: 'three' });
    expect(after.body['session_id']).not.toBe(before.body['session_id']);
    expect((await gateway.receiver.waitFor(4)).map((d) => d.body.text)).toContain('Started a new conversation.');
  });

  it('/stop aborts the running turn of its session only', async () => {
    const aborted: string[] = [];
    const echo = new CommandAgent(new Map());
    const agent: Agent = {
      handle: async (turn) => {
        if (turn.text !== 'long') return echo.handle(turn);
        await new Promise<void>((resolve) => turn.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted.push(turn.session.chatId);
      },
    };
    gateway = await startTestGateway({ agent });
    await gateway.send({ chat_id: 'busy', text: 'long' });
    await gateway.send({ chat_id: 'calm', text: 'hello' });
    await gateway.receiver.waitFor(1);
    await gateway.send({ chat_id: 'busy', text: '/stop' });
    const replies = await gateway.receiver.waitFor(2);
    expect(aborted).toEqual(['busy']);
    expect(replies.map((d) => [d.body.chat_id, d.body.text])).toEqual([
      ['calm', 'hello'],
      ['busy', 'Stopped the turn this chat was running, if there was one.'],
    ]);
  });

  it('/stop says what keeps running in the chat: its background commands and scheduled jobs', async () => {
    gateway = await startTestGateway({ clock: 'manual', webhookToken: true, env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*' } });
    await gateway.send({ chat_id: 'ops', thread_id: 't', text: '/stop' });
    expect((await gateway.receiver.waitFor(1))[0]!.body.text).toBe('Stopped the turn this chat was running, if there was one. Nothing else runs here.');
    await gateway.send({ chat_id: 'ops', thread_id: 't', text: '/run sleep 30' });
    await gateway.send({ chat_id: 'ops', thread_id: 't', text: '/remind 1h stretch' });
    await gateway.send({ chat_id: 'ops', thread_id: 'other', text: '/remind 1h elsewhere' });
    await gateway.receiver.waitFor(4);
    await gateway.send({ chat_id: 'ops', thread_id: 't', text: '/stop' });
    const stop = (await gateway.receiver.waitFor(5))[4]!.body;
    expect(stop).toMatchObject({ chat_id: 'ops', thread_id: 't' });
    expect(stop.text).toBe(
      'Stopped the turn this chat was running, if there was one. Still running here, which /stop does not end: ' +
        '1 background command (/jobs lists them, /kill <id> ends one); 1 reminder or cron job (/cron list, /cron rm <id>).',
    );
    // The command ends here, not with the test.
    const started = (await gateway.receiver.waitFor(5)).find((d) => d.body.text.startsWith('Started'))!.body.text;
    await gateway.send({ chat_id: 'ops', thread_id: 't', text: `/kill ${/Started (\w+)/.exec(started)![1]!}` });
    await gateway.receiver.waitFor(6);
  });
});
