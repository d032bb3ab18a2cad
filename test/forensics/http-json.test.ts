import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { AnswerTooLargeError, getJson, httpGet } from '../../src/forensics/http-json.js';
import { ReadBudget } from '../../src/forensics/read-budget.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';

type Handler = (response: ServerResponse, path: string) => void;
let handle: Handler = (response) => response.end('{}');
const held: ServerResponse[] = [];
const server = createServer((request, response) => {
  request.resume();
  handle(response, request.url ?? '/');
});
const origin = await new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
afterEach(() => {
  vi.restoreAllMocks();
  for (const response of held.splice(0)) response.destroy();
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

const what = 'store http://example';
const url = (path = '/api/x?token=abc') => new URL(`${origin}${path}`);

async function failure(promise: Promise<unknown>): Promise<string> {
  return assertThreadlineError(await rejectionOf(promise), 'TL_TRACE_SOURCE').message;
}

describe('getJson', () => {
  it('parses a JSON answer and says its status', async () => {
    handle = (response) => response.end('{"data":[1]}');
    expect(await getJson(url(), { what })).toEqual({ status: 200, body: { data: [1] } });
  });

  it('names the store and the URL without its query in every message', async () => {
    handle = (response) => response.writeHead(502).end('bad gateway');
    const message = await failure(getJson(url(), { what }));
    expect(message).toBe(`store http://example (GET ${origin}/api/x) answered 502: bad gateway; check the URL and the store's own log.`);
  });

  it('quotes the first 200 printable characters of an error answer, secrets redacted', async () => {
    handle = (response) => response.writeHead(500).end(`\u0000boom\r\n\tat http://u:pw@db.local/x ${'y'.repeat(400)}`);
    const message = await failure(getJson(url(), { what }));
    expect(message).toContain('answered 500: boom at http://db.local/x yyy');
    expect(message).not.toMatch(/pw|\u0000|\r|\n|\t/);
    expect(message).toMatch(/y{150}…; check/);
    expect(message).not.toMatch(/y{200}/);
  });

  it('redacts before it cuts: a token the 200-character cut would split shows no part of itself', async () => {
    // A Telegram bot token is only recognised whole (30 or more characters after the colon).
    const token = `123456:${'A'.repeat(40)}`;
    handle = (response) => response.writeHead(500).end(`${'z'.repeat(170)} ${token}`);
    const message = await failure(getJson(url(), { what }));
    expect(message).not.toContain('123456:AAA');
    expect(message).toContain('<redacted>');
  });

  it('returns a status the caller tells apart itself, with or without a body', async () => {
    handle = (response) => response.writeHead(404).end();
    expect(await getJson(url(), { what, acceptStatus: [404] })).toEqual({ status: 404, body: undefined });
    handle = (response) => response.writeHead(404).end('{"errors":[]}');
    expect(await getJson(url(), { what, acceptStatus: [404] })).toEqual({ status: 404, body: { errors: [] } });
    expect(await failure(getJson(url(), { what }))).toMatch(/answered 404: \{"errors":\[\]\}/);
  });

  it('refuses an empty body and one that is not JSON', async () => {
    handle = (response) => response.end('  \n');
    expect(await failure(getJson(url(), { what }))).toMatch(/answered 200 with an empty body; check that the URL is the store's query API/);
    handle = (response) => response.end('<html><body>Login</body></html>');
    expect(await failure(getJson(url(), { what }))).toMatch(/answered with something that is not JSON \("<html><body>Login<\/body><\/html>"\)/);
  });

  it('refuses a body over the size cap, declared or streamed', async () => {
    handle = (response) => response.end(JSON.stringify({ pad: 'x'.repeat(100) }));
    expect(await failure(getJson(url(), { what, maxBytes: 50 }))).toMatch(/answered with more than 50 bytes; narrow the time window or lower the limit/);
    handle = (response) => {
      response.writeHead(200, { 'transfer-encoding': 'chunked' });
      response.write('[' + '1,'.repeat(40));
      response.end('1]');
    };
    expect(await failure(getJson(url(), { what, maxBytes: 50 }))).toMatch(/more than 50 bytes/);
    expect((await getJson(url(), { what, maxBytes: 200 })).status).toBe(200);
  });

  it('counts every body against a shared budget, abandons the one that passes it, and asks nothing more once spent', async () => {
    let asked = 0;
    handle = (response) => {
      asked++;
      response.writeHead(200, { 'transfer-encoding': 'chunked' });
      response.end(JSON.stringify({ pad: 'x'.repeat(300) }));
    };
    const budget = new ReadBudget(700);
    expect((await getJson(url(), { what, budget })).status).toBe(200);
    expect((await getJson(url(), { what, budget })).status).toBe(200);
    const third = await rejectionOf(getJson(url(), { what, budget }));
    expect(third).toBeInstanceOf(AnswerTooLargeError);
    expect((third as AnswerTooLargeError).limit).toBe('budget');
    expect((third as AnswerTooLargeError).message).toMatch(/the 700 bytes this command reads from the store in all are spent/);
    expect(budget.spent).toBe(true);
    expect(await rejectionOf(getJson(url(), { what, budget }))).toBeInstanceOf(AnswerTooLargeError);
    expect(asked).toBe(3);
  });

  it('gives up on a store that does not answer in time', async () => {
    handle = (response) => held.push(response);
    expect(await failure(getJson(url(), { what, timeoutMs: 200 }))).toMatch(/\(GET .*\/api\/x\) did not answer within 0.2 s; check that it is up and reachable/);
  });

  it('says a refused connection is refused, and where', async () => {
    const closed = createServer();
    const port = await new Promise<number>((resolve) => closed.listen(0, '127.0.0.1', () => resolve((closed.address() as AddressInfo).port)));
    await new Promise((resolve) => closed.close(resolve));
    expect(await failure(getJson(new URL(`http://127.0.0.1:${port}/x`), { what }))).toBe(
      `store http://example (GET http://127.0.0.1:${port}/x) refused the connection; check that it is running and listening at 127.0.0.1:${port}.`,
    );
  });

  it('says an unknown host is unknown', async () => {
    const dnsFailure = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND jaeger.internal'), { code: 'ENOTFOUND' }),
    });
    vi.spyOn(globalThis, 'fetch').mockRejectedValue(dnsFailure);
    expect(await failure(getJson(new URL('http://jaeger.internal:16686/api'), { what }))).toMatch(
      /could not be reached: the host jaeger.internal was not found \(DNS\); check the host name in the URL/,
    );
  });

  it('says what else went wrong on the way, secrets redacted', async () => {
    const reset = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('socket hang up near http://u:pw@h/'), { code: 'ECONNRESET' }),
    });
    vi.spyOn(globalThis, 'fetch').mockRejectedValue(reset);
    const message = await failure(getJson(url(), { what }));
    expect(message).toMatch(/could not be reached \(ECONNRESET: socket hang up near http:\/\/h\/\)/);
    expect(message).not.toContain('pw');
  });
});

describe('httpGet', () => {
  it('sends user:password as a Basic header, not in the URL, and never names them', async () => {
    const seen: string[] = [];
    handle = (response, path) => {
      seen.push(path);
      response.writeHead(401).end('who are you');
    };
    const withCredentials = new URL(url('/api/y'));
    withCredentials.username = 'reader';
    withCredentials.password = 'p@ss word';
    const spy = vi.spyOn(globalThis, 'fetch');
    const answer = await httpGet(withCredentials, { what });
    expect(answer).toMatchObject({ status: 401, text: 'who are you' });
    const [target, init] = spy.mock.calls[0]!;
    expect(String(target)).toBe(`${origin}/api/y`);
    expect((init?.headers as Record<string, string>).authorization).toBe(`Basic ${Buffer.from('reader:p@ss word').toString('base64')}`);
    const message = await failure(getJson(withCredentials, { what }));
    expect(message).not.toMatch(/reader|p@ss|p%40ss/);
  });
});
