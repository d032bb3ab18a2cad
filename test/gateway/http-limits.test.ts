import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { drip, useBoundedGateway, useRawConnections, type RawConnection } from '../helpers/raw-http.js';

const TOKEN = 'limits-token';
const HEADERS_TIMEOUT_MS = 400;
const REQUEST_TIMEOUT_MS = 3_000;
const KEEP_ALIVE_TIMEOUT_MS = 600;
/** Node checks the deadlines once a second at most (and every HEADERS_TIMEOUT_MS here); the rest is a loaded machine. */
const LATE_MS = HEADERS_TIMEOUT_MS + 800;

const connectRaw = useRawConnections();

/** A raw client connection, once connected: what it received, and when (ms after connecting) the gateway closed it. */
async function open(url: string): Promise<RawConnection> {
  const connection = connectRaw(url);
  await connection.connected;
  return connection;
}

/** Resolves once `connection` has received a whole response whose body holds `marker`. */
async function response(connection: RawConnection, marker: string): Promise<string> {
  for (let waited = 0; !connection.received().includes(marker); waited += 10) {
    if (waited > 5_000) throw new Error(`no response with ${marker}; received ${JSON.stringify(connection.received())}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return connection.received();
}

describe('HTTP limits configuration', () => {
  it('defaults to a 30 s request, 10 s headers, 65 s keep-alive and 1,024 connections', () => {
    expect(readGatewayConfig({}).http).toEqual({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 65_000, maxConnections: 1_024 });
  });

  it('keeps the default headers timeout within a shorter request timeout, and refuses a longer one', () => {
    expect(readGatewayConfig({ THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '5000' }).http.headersTimeoutMs).toBe(5_000);
    const refuse = () => readGatewayConfig({ THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '5000', THREADLINE_HTTP_HEADERS_TIMEOUT_MS: '6000' });
    expect(refuse).toThrow(ConfigError);
    expect(refuse).toThrow(/^Invalid THREADLINE_HTTP_HEADERS_TIMEOUT_MS: /);
  });
});

const healthRequest = 'GET /v1/health HTTP/1.1\r\nHost: threadline\r\n\r\n';

describe('bounded HTTP: timeouts and 401', () => {
  const gateway = useBoundedGateway({
    token: TOKEN,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
  });

  it('cuts off a body sent 1 byte every 200 ms at the request timeout, with a 408', async () => {
    const connection = await open(gateway().url);
    connection.socket.write(
      `POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    );
    drip(connection.socket, '{"chat_id":"slow","text":"'.padEnd(1000, 'x'), 200);
    const elapsed = await connection.closed(REQUEST_TIMEOUT_MS + LATE_MS + 2_000);
    expect(elapsed).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts off headers sent 1 byte every 100 ms at the headers timeout, well before the request timeout', async () => {
    const connection = await open(gateway().url);
    connection.socket.write('POST /v1/messages HTTP/1.1\r\nHost: threadline\r\n');
    drip(connection.socket, `X-Drip: ${'a'.repeat(1000)}`, 100);
    const elapsed = await connection.closed(REQUEST_TIMEOUT_MS);
    expect(elapsed).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(HEADERS_TIMEOUT_MS + LATE_MS);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes a connection that sends nothing at the headers timeout', async () => {
    const connection = await open(gateway().url);
    const elapsed = await connection.closed(REQUEST_TIMEOUT_MS);
    expect(elapsed).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(HEADERS_TIMEOUT_MS + LATE_MS);
  });

  it('closes a kept-alive connection idle for the keep-alive timeout', async () => {
    const connection = await open(gateway().url);
    connection.socket.write(healthRequest);
    const answer = await response(connection, '"status"');
    expect(answer).toMatch(/^HTTP\/1\.1 200 [^]*\r\nconnection: keep-alive\r\n/i);
    const answeredAt = Date.now();
    // Node keeps the socket 1 s past the advertised timeout, so a client reusing it never races the close.
    await connection.closed(KEEP_ALIVE_TIMEOUT_MS + 1_000 + 2_000);
    expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 50);
  });

  it('answers 401 with Connection: close and closes the socket without reading the body', async () => {
    const connection = await open(gateway().url);
    // 60,000 bytes announced, 16 sent: the rest would otherwise be drained for as long as the caller sends it.
    connection.socket.write(
      'POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"chat_id":"x",',
    );
    const elapsed = await connection.closed(REQUEST_TIMEOUT_MS - 500);
    const [head] = connection.received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 401 /);
    expect(head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(elapsed).toBeLessThan(REQUEST_TIMEOUT_MS - 500);
  });

  it('still answers well-behaved clients', async () => {
    const connection = await open(gateway().url);
    const body = JSON.stringify({ chat_id: 'fine', text: 'hello' });
    connection.socket.write(
      `POST /v1/messages HTTP/1.1\r\nHost: threadline\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    expect(await response(connection, '"trace_id"')).toMatch(/^HTTP\/1\.1 202 /);
  });
});

describe('bounded HTTP: the connection cap', () => {
  const CAP = 3;
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway({ env: { THREADLINE_HTTP_MAX_CONNECTIONS: String(CAP) } });
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it(`serves ${CAP} kept-alive connections, closes connection ${CAP + 1} unanswered, and serves a new one once a slot is free`, async () => {
    const held: RawConnection[] = [];
    for (let i = 0; i < CAP; i++) {
      const connection = await open(gateway.url);
      connection.socket.write(healthRequest);
      // Answered: the gateway has accepted it and holds it open (keep-alive).
      await response(connection, '"status"');
      held.push(connection);
    }
    const refused = await open(gateway.url);
    refused.socket.write(healthRequest);
    await refused.closed(2_000);
    expect(refused.received()).toBe('');

    held[0]!.socket.destroy();
    for (let tries = 0; ; tries++) {
      const next = await open(gateway.url);
      next.socket.write(healthRequest);
      const served = await Promise.race([response(next, '"status"').then(() => true), next.closed(2_000).then(() => false)]);
      if (served) break;
      // The server may not have seen the freed connection close yet.
      expect(tries).toBeLessThan(20);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const connection of held.slice(1)) expect(connection.socket.readableEnded).toBe(false);
  });
});
