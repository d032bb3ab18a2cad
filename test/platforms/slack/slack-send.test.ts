import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SlackPlatform } from '../../../src/platforms/slack/slack-platform.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('Slack sends', () => {
  it('let go of a send that Slack does not answer once the shutdown signal aborts, as a retryable failure', async () => {
    const silent = createServer(() => {});
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const slack = new SlackPlatform({
      botToken: 'xoxb-test',
      signingSecret: 'secret',
      apiUrl: `http://127.0.0.1:${port}/api/`,
      threadTopLevel: false,
      logger: pino({ level: 'silent' }),
    });
    const shutdown = new AbortController();
    const sending = slack.send({ id: 'd/1', kind: 'reply', destination: { platform: 'slack', chatId: 'C1' }, text: 'hi', traceId: '0'.repeat(32) }, shutdown.signal);
    setTimeout(() => shutdown.abort(new Error('the gateway is stopping')), 100);
    const started = Date.now();
    await expect(sending).rejects.toMatchObject({ retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
