import { afterEach, describe, expect, it, vi } from 'vitest';
import { SlackPlatform } from '../../../src/platforms/slack/slack-platform.js';
import { createLogger } from '../../../src/telemetry/logger.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe("@slack/web-api's own log lines", () => {
  it('go through the gateway logger as JSON records, a credentialed URL in them redacted, never to the console, debug chatter dropped', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', privacy: { privacy: 'plain' }, destination: { write: (line: string) => void lines.push(line) } });
    const consoleCalls = (['debug', 'info', 'log', 'warn', 'error'] as const).map((method) => vi.spyOn(console, method).mockImplementation(() => undefined));
    const slack = new SlackPlatform({
      botToken: 'xoxb-1111-2222-slackBotTokenSecret',
      signingSecret: 'secret',
      // fetch refuses a URL with credentials, and the client logs the refusal with the URL in it.
      apiUrl: 'http://admin:s3cret-api-pass@127.0.0.1:9/api/',
      threadTopLevel: false,
      logger,
    });
    await expect(
      slack.send({ id: 'd/1', kind: 'reply', destination: { platform: 'slack', chatId: 'C1' }, text: 'hi', traceId: '0'.repeat(32) }, new AbortController().signal),
    ).rejects.toBeDefined();

    for (const spy of consoleCalls) expect(spy).not.toHaveBeenCalled();
    const records = lines.map((line) => JSON.parse(line) as { component?: string; msg?: string });
    const failed = records.find((record) => record.component === 'slack-web-api' && record.msg?.includes('http request failed'));
    expect(failed?.msg).toContain('http://127.0.0.1:9/api/');
    // Its debug lines (every request's body: a chat's text and plain channel id) stay out, even at debug.
    expect(records.filter((record) => /^http request (url|body|headers)/.test(record.msg ?? ''))).toEqual([]);
    const text = lines.join('');
    for (const secret of ['s3cret-api-pass', 'admin:', 'slackBotTokenSecret']) expect(text).not.toContain(secret);
  });
});
