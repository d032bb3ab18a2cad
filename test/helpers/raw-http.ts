import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';

/** The HTTP limits a bounded gateway is started with (the keep-alive timeout left at its default when absent). */
export interface BoundedHttp {
  readonly token: string;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs?: number;
}

/**
 * A gateway with a webhook token and these HTTP timeouts, started before the tests of the
 * calling file or describe block and stopped after them.
 */
export function useBoundedGateway(limits: BoundedHttp): () => TestGateway {
  let gateway: TestGateway | undefined;
  beforeAll(async () => {
    gateway = await startTestGateway({
      env: {
        THREADLINE_WEBHOOK_TOKEN: limits.token,
        THREADLINE_HTTP_HEADERS_TIMEOUT_MS: String(limits.headersTimeoutMs),
        THREADLINE_HTTP_REQUEST_TIMEOUT_MS: String(limits.requestTimeoutMs),
        ...(limits.keepAliveTimeoutMs === undefined ? {} : { THREADLINE_HTTP_KEEP_ALIVE_TIMEOUT_MS: String(limits.keepAliveTimeoutMs) }),
      },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
  });
  return () => {
    if (gateway === undefined) throw new Error('the bounded gateway has not started');
    return gateway;
  };
}

/**
 * A raw TCP connection to a gateway on 127.0.0.1, for what an HTTP client would not send (a
 * request cut off, dripped, malformed): what the gateway sent on it, and when it closed it.
 */
export interface RawConnection {
  readonly socket: Socket;
  /** Everything the gateway sent so far, as latin1. */
  received(): string;
  /** Resolves once connected; rejects if the connection fails. */
  readonly connected: Promise<void>;
  /** Resolves with the ms from connecting to the close (a reset is a close too). */
  readonly whenClosed: Promise<number>;
  /** `whenClosed`, or a rejection after `withinMs` if still open. */
  closed(withinMs: number): Promise<number>;
}

/** Connects to the host and port of `url`; writes `first` as soon as connected, if given. */
export function rawConnection(url: string, first?: string): RawConnection {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname, first === undefined ? undefined : () => void socket.write(first));
  const start = Date.now();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset is a close too
  const whenClosed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - start)));
  const connected = new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  // Handled here: a caller that never awaits it (the connection's close says enough) leaves no unhandled rejection.
  connected.catch(() => {});
  return {
    socket,
    received: () => received,
    connected,
    whenClosed,
    closed: (withinMs) =>
      Promise.race([
        whenClosed,
        new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`still open after ${withinMs} ms; received ${JSON.stringify(received)}`)), withinMs)),
      ]),
  };
}

/** `rawConnection` for one test file: every connection it opened is destroyed after its test. */
export function useRawConnections(): (url: string, first?: string) => RawConnection {
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });
  return (url, first) => {
    const connection = rawConnection(url, first);
    sockets.push(connection.socket);
    return connection;
  };
}

/** Writes `text` one byte every `everyMs` until the socket closes. */
export function drip(socket: Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}
