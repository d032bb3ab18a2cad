import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();
// The built bin, as a user's command runs it (dist/ is built before the run).
const CLI = fileURLToPath(new URL('../../dist/cli/threadline.js', import.meta.url));

function io(env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  return { io: { out: (text: string) => void (out += text), err: (text: string) => void (err += text), env, color: false }, out: () => out, err: () => err };
}

describe('threadline send', () => {
  it('from a command started by /run, `origin` is the chat and thread that started it', async () => {
    const g = await start({ webhookToken: true, env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*' } });
    await g.send({
      chat_id: 'ops',
      thread_id: 'deploys',
      chat_type: 'group',
      text: `/run node ${CLI} send --data-dir ${g.dataDir} origin halfway there`,
    });
    const deliveries = await g.receiver.waitFor(3, 30_000);
    const sent = deliveries.find((delivery) => delivery.body.kind === 'send');
    expect(sent?.body).toMatchObject({ chat_id: 'ops', thread_id: 'deploys', text: 'halfway there' });
    const done = deliveries.find((delivery) => delivery.body.kind === 'notification');
    expect(done?.body.text).toContain('queued; the running gateway sends it within a second');
  }, 60_000);

  it('from /run in a Telegram forum topic: sent to that topic, though the command never sees the bot token', async () => {
    const g = await start({ telegram: true, env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: 'telegram:7' } });
    const chat = -1001000000001;
    const status = await g.sendTelegram({
      update_id: 1,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: chat, type: 'supergroup', title: 'Team', is_forum: true },
        from: { id: 7, is_bot: false, first_name: 'Ann' },
        text: `/run node ${CLI} send origin step two done`,
        message_thread_id: 12,
        is_topic_message: true,
      },
    });
    expect(status.status).toBe(200);
    await until(() => g.telegram!.sent.some((sent) => sent.text.startsWith('Process ')), 30_000);
    const ended = g.telegram!.sent.find((sent) => sent.text.startsWith('Process '))!;
    expect(ended.text).toContain('finished: exit 0');
    expect(ended.text).toContain('queued; the running gateway sends it within a second');
    await until(() => g.telegram!.sent.some((sent) => sent.text === 'step two done'));
    expect(g.telegram!.sent.find((sent) => sent.text === 'step two done')).toMatchObject({ chatId: String(chat), threadId: '12' });
  }, 60_000);

  it('from /run in a Slack thread: sent to that thread, though the command never sees the bot token', async () => {
    const g = await start({ slack: true, env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: 'slack:U1' } });
    const status = await g.sendSlack({
      type: 'event_callback',
      event_id: 'Ev1',
      event: {
        type: 'message',
        channel: 'C1001',
        channel_type: 'channel',
        user: 'U1',
        // An explicit --data-dir: what is left to tell is the platforms the gateway enables.
        text: `/run node ${CLI} send --data-dir ${g.dataDir} origin deploy finished`,
        ts: '1800000000.000001',
        thread_ts: '1700000000.000001',
      },
    });
    expect(status.status).toBe(200);
    await until(() => g.slack!.sent.some((sent) => sent.text.startsWith('Process ')), 30_000);
    expect(g.slack!.sent.find((sent) => sent.text.startsWith('Process '))!.text).toContain('finished: exit 0');
    await until(() => g.slack!.sent.some((sent) => sent.text === 'deploy finished'));
    expect(g.slack!.sent.find((sent) => sent.text === 'deploy finished')).toMatchObject({ channel: 'C1001', threadTs: '1700000000.000001' });
  }, 60_000);

  it('without a session in the environment, says so and exits 1', async () => {
    const g = await start();
    const cli = io({ THREADLINE_DATA_DIR: g.dataDir });
    const saved = process.env['THREADLINE_SESSION_CHAT_ID'];
    delete process.env['THREADLINE_SESSION_CHAT_ID'];
    try {
      expect(await runThreadline(['send', 'origin', 'hello'], cli.io)).toBe(1);
    } finally {
      if (saved !== undefined) process.env['THREADLINE_SESSION_CHAT_ID'] = saved;
    }
    expect(cli.err()).toContain('[TL_SESSION_MISSING]');
  });

  it('to an explicit chat and thread needs no session: sent by the running gateway', async () => {
    const g = await start();
    const cli = io({ THREADLINE_DATA_DIR: g.dataDir });
    await withoutSessionVariables(async () => expect(await runThreadline(['send', 'webhook:ops:deploys', 'nightly', 'build', 'green'], cli.io)).toBe(0));
    expect(cli.out()).toMatch(/^Sent to webhook:ops:deploys: queued; the running gateway sends it within a second\n$/);
    const [sent] = await g.receiver.waitFor(1);
    expect(sent!.body).toMatchObject({ chat_id: 'ops', thread_id: 'deploys', text: 'nightly build green', kind: 'send' });
  });

  it('refuses a THREADLINE_SEND_PLATFORMS that lists no platform names, before opening anything', async () => {
    const cli = io({ THREADLINE_SEND_PLATFORMS: 'webhook, tele gram', THREADLINE_DATA_DIR: '/nonexistent' });
    expect(await runThreadline(['send', 'webhook:ops', 'hi'], cli.io)).toBe(1);
    expect(cli.err()).toContain('Invalid THREADLINE_SEND_PLATFORMS');
    expect(cli.err()).toContain('[TL_CONFIG_INVALID]');
  });

  it('says when no gateway runs on the data dir, and the next one to start sends it', async () => {
    const g = await start();
    await g.running.stop();
    const cli = io({ THREADLINE_DATA_DIR: g.dataDir });
    await withoutSessionVariables(async () => expect(await runThreadline(['send', 'webhook:ops', 'queued', 'while', 'down'], cli.io)).toBe(0));
    expect(cli.out()).toContain(`queued in ${g.dataDir}; no gateway runs there now, so it is sent when one starts`);
    await g.restart();
    const [sent] = await g.receiver.waitFor(1);
    expect(sent!.body).toMatchObject({ chat_id: 'ops', text: 'queued while down' });
  });
});

/** Runs `fn` with no THREADLINE_SESSION_* variable in this process's environment. */
async function withoutSessionVariables(fn: () => Promise<void>): Promise<void> {
  const saved = Object.entries(process.env).filter(([name]) => name.startsWith('THREADLINE_SESSION_'));
  for (const [name] of saved) delete process.env[name];
  try {
    await fn();
  } finally {
    for (const [name, value] of saved) process.env[name] = value;
  }
}
