import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { rawConnection, useBoundedGateway } from '../helpers/raw-http.js';

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ telegram: true, slack: true, discord: true });
});
afterAll(async () => {
  await gateway.stop();
});

async function raw(path: string, body: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${gateway.url}${path}`, { method: 'POST', headers, body });
  await response.body?.cancel();
  return response.status;
}

const hostileHeader = fc.oneof(
  // Printable ASCII: what an HTTP client lets through as a header value.
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 300 }),
  fc.constantFrom(
    'chat.id=victim,chat.thread.id=1,session.id=x',
    '%zz=%E0%A4%A,=,,,;;;',
    Array.from({ length: 2000 }, (_, i) => `k${i}=v`).join(','),
    '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-ff',
  ),
);

describe('hostile HTTP input', () => {
  it('POST /v1/messages answers 202 or 4xx for any body and headers, and routes only by the body', async () => {
    const body = fc.oneof(
      fc.json(),
      fc.record(
        {
          chat_id: fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 300 }), fc.anything()),
          text: fc.oneof(fc.string({ unit: 'grapheme', minLength: 1 }), fc.anything()),
          thread_id: fc.oneof(fc.string({ unit: 'binary', minLength: 1 }), fc.anything()),
          chat_type: fc.oneof(fc.constantFrom('dm', 'group', 'channel', 'thread'), fc.string()),
        },
        { requiredKeys: [] },
      ).map((value) => JSON.stringify(value)),
    );
    const accepted: string[] = [];
    await fc.assert(
      fc.asyncProperty(body, hostileHeader, hostileHeader, async (text, baggage, traceparent) => {
        const status = await raw('/v1/messages', text, { 'content-type': 'application/json', baggage, traceparent });
        // 431 is node:http refusing oversized headers before threadline sees them.
        expect([202, 400, 413, 431]).toContain(status);
        if (status === 202) accepted.push((JSON.parse(text) as { chat_id: string }).chat_id);
      }),
      { numRuns: 300 },
    );
    const deliveries = await gateway.receiver.waitFor(accepted.length);
    expect(deliveries.map((d) => d.body.chat_id).sort()).toEqual([...accepted].sort());
  });

  it('the Telegram webhook answers 200 or 4xx for any body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.json(), fc.string()), async (text) => {
        const status = await raw('/v1/telegram/webhook', text, {
          'content-type': 'application/json',
          'x-telegram-bot-api-secret-token': 'telegram-secret',
        });
        expect([200, 400, 413]).toContain(status);
      }),
      { numRuns: 200 },
    );
  });

  it('the Slack endpoint answers 401 to unsigned bodies and never 5xx to signed ones', async () => {
    await fc.assert(
      fc.asyncProperty(fc.json(), async (text) => {
        expect(await raw('/v1/slack/events', text, { 'content-type': 'application/json' })).toBe(401);
        const answer = await gateway.sendSlack(JSON.parse(text) as object);
        expect([200, 400]).toContain(answer.status);
      }),
      { numRuns: 200 },
    );
  });
});

describe('hostile Discord interactions', () => {
  it('the Discord interactions endpoint answers 401 to unsigned bodies and never 5xx to signed ones', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.json(), fc.string()), async (text) => {
        expect(await raw('/v1/discord/interactions', text, { 'content-type': 'application/json' })).toBe(401);
        const signed = gateway.discord!.signInteraction(text);
        expect([200, 400]).toContain(await raw('/v1/discord/interactions', signed.body, signed.headers));
      }),
      { numRuns: 200 },
    );
  });
});

describe('hostile connections', () => {
  const TOKEN = 'fuzz-token';
  const HEADERS_TIMEOUT_MS = 300;
  const REQUEST_TIMEOUT_MS = 600;
  const KEEP_ALIVE_TIMEOUT_MS = 300;
  // The longest a connection may live: a request at its timeout, or one answered and then kept
  // alive (Node adds 1 s to the keep-alive timeout), plus a check interval and a loaded machine.
  const BOUND_MS = Math.max(REQUEST_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS + 1_000) + HEADERS_TIMEOUT_MS + 1_500;
  const bounded = useBoundedGateway({
    token: TOKEN,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
  });

  function request(authorized: boolean, body: string): string {
    const auth = authorized ? `Authorization: Bearer ${TOKEN}\r\n` : '';
    return `POST /v1/messages HTTP/1.1\r\nHost: threadline\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  }

  /** Sends `text`, then nothing: resolves with the ms until the gateway closed the socket and what it answered. */
  function sendThenWait(text: string): Promise<{ ms: number; answer: string }> {
    const connection = rawConnection(bounded().url, text);
    const timer = setTimeout(() => connection.socket.destroy(new Error('still open')), BOUND_MS * 2);
    return connection.whenClosed.then((ms) => {
      clearTimeout(timer);
      return { ms, answer: connection.received() };
    });
  }

  it('closes every connection within its timeouts, wherever the client stops sending', async () => {
    const client = fc.record({ authorized: fc.boolean(), chatId: fc.stringMatching(/^[\w:-]{1,40}$/), cut: fc.double({ min: 0, max: 1, noNaN: true }) });
    await fc.assert(
      fc.asyncProperty(fc.array(client, { minLength: 16, maxLength: 16 }), async (clients) => {
        // All at once: each waits out a timeout, so one after another would take minutes.
        const results = await Promise.all(
          clients.map(({ authorized, chatId, cut }) => {
            const full = request(authorized, JSON.stringify({ chat_id: chatId, text: 'hi' }));
            const sent = full.slice(0, Math.round(cut * full.length));
            return sendThenWait(sent).then((result) => ({ ...result, complete: sent === full, authorized }));
          }),
        );
        for (const { ms, answer, complete, authorized } of results) {
          expect(ms).toBeLessThan(BOUND_MS);
          const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
          // A request never completed is cut off with 408, or refused 401 as soon as its headers are in.
          expect(complete && authorized ? [202] : [401, 408]).toContain(status);
        }
      }),
      { numRuns: 3 },
    );
    expect((await fetch(`${bounded().url}/v1/health`)).status).toBe(200);
  });
});
