import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { useTestGateways } from '../helpers/gateway.js';

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
