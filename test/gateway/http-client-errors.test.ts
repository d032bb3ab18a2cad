import { describe, expect, it } from 'vitest';
import { drip, useBoundedGateway, useRawConnections } from '../helpers/raw-http.js';

/**
 * What node:http and fastify answer before any route runs (a request cut off by the HTTP
 * limits, malformed HTTP, oversized headers, a URL that cannot be decoded) leaves in
 * threadline's `{error, code}` shape, like every other refusal, and closes the connection.
 * Raw sockets on 127.0.0.1: an HTTP client would not send most of this.
 */
const TOKEN = 'client-errors-token';
const HEADERS_TIMEOUT_MS = 400;
const REQUEST_TIMEOUT_MS = 1_500;
/** Node checks the deadlines every HEADERS_TIMEOUT_MS here; the rest is a loaded machine. */
const LATE_MS = 2_000;

const connectRaw = useRawConnections();

const gateway = useBoundedGateway({ token: TOKEN, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS });

interface Answer {
  readonly status: number;
  readonly head: string;
  readonly body: unknown;
  /** Everything the gateway sent on the connection. */
  readonly received: string;
}

/** Sends `first` on a new connection (then `dripping.text`, one byte every `everyMs`) and reads until the gateway closes it. */
async function exchange(first: string, dripping?: { text: string; everyMs: number }): Promise<Answer> {
  const connection = connectRaw(gateway().url, first);
  await connection.connected;
  if (dripping !== undefined) drip(connection.socket, dripping.text, dripping.everyMs);
  await connection.closed(REQUEST_TIMEOUT_MS + LATE_MS);
  const received = connection.received();
  const [head = '', ...rest] = received.split('\r\n\r\n');
  const text = rest.join('\r\n\r\n');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // left as text, so the assertion shows it
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]), head, body, received };
}

/** A whole response in threadline's shape: JSON, its length declared, the connection closed. */
function expectThreadlineAnswer(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.received).toBe(status);
  expect(answer.body).toEqual({ error: expect.any(String), code });
  expect(answer.head).toMatch(/\r\ncontent-type: application\/json; charset=utf-8(\r\n|$)/i);
  expect(answer.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(answer.head)?.[1]);
  expect(length).toBe(Buffer.byteLength(JSON.stringify(answer.body)));
  // One answer, nothing after it.
  expect(answer.received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
}

describe('requests cut off by the HTTP limits', () => {
  it('a body sent 1 byte every 200 ms: 408 TL_REQUEST_TIMEOUT at the request timeout, naming both limits', async () => {
    const started = Date.now();
    const answer = await exchange(
      `POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
      { text: '{"chat_id":"slow","text":"'.padEnd(1000, 'x'), everyMs: 200 },
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expectThreadlineAnswer(answer, 408, 'TL_REQUEST_TIMEOUT');
    expect((answer.body as { error: string }).error).toContain(`${REQUEST_TIMEOUT_MS} ms`);
    expect((answer.body as { error: string }).error).toContain(`${HEADERS_TIMEOUT_MS} ms`);
  });

  it('headers sent 1 byte every 100 ms: 408 TL_REQUEST_TIMEOUT at the headers timeout', async () => {
    const answer = await exchange('POST /v1/messages HTTP/1.1\r\nHost: threadline\r\n', { text: `X-Drip: ${'a'.repeat(1000)}`, everyMs: 100 });
    expectThreadlineAnswer(answer, 408, 'TL_REQUEST_TIMEOUT');
  });

  it('an answer already sent (415, body never finished) is not followed by a second one at the timeout', async () => {
    const answer = await exchange(`POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 10\r\n\r\n{`);
    expect(answer.status, answer.received).toBe(415);
    expect(answer.received.match(/HTTP\/1\.1 /g), answer.received).toHaveLength(1);
    expect(answer.body).toEqual({ error: expect.any(String), code: 'TL_BAD_REQUEST' });
  });
});

describe('malformed HTTP', () => {
  it.each([
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
    ['a header line without a colon', 'GET /v1/health HTTP/1.1\r\nHost: threadline\r\nNo colon here\r\n\r\n'],
    ['Content-Length with Transfer-Encoding (a smuggling shape)', 'POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['a bare CR in a header value', 'GET /v1/health HTTP/1.1\r\nHost: threadline\r\nX-A: a\rb\r\n\r\n'],
  ])('%s: 400 TL_BAD_REQUEST', async (_name, request) => {
    expectThreadlineAnswer(await exchange(request), 400, 'TL_BAD_REQUEST');
  });

  it('headers over the size limit: 431 TL_BAD_REQUEST that says so', async () => {
    const answer = await exchange(`GET /v1/health HTTP/1.1\r\nHost: threadline\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectThreadlineAnswer(answer, 431, 'TL_BAD_REQUEST');
    expect((answer.body as { error: string }).error).toMatch(/headers/i);
  });

  it('a path that cannot be percent-decoded: 400 TL_BAD_REQUEST, not FST_ERR_BAD_URL', async () => {
    const answer = await exchange('GET /v1/%zz HTTP/1.1\r\nHost: threadline\r\nConnection: close\r\n\r\n');
    expect(answer.status, answer.received).toBe(400);
    expect(answer.body).toEqual({ error: expect.any(String), code: 'TL_BAD_REQUEST' });
  });
});
