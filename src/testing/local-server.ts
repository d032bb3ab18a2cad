import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { messageOf } from '../errors.js';

export interface LocalRequest {
  readonly method: string;
  readonly path: string;
  /** The query string's parameters. */
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  readonly body: string;
  /** The body's bytes, for binary protocols. */
  readonly raw: Buffer;
}

export interface LocalResponse {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Objects are sent as JSON. */
  readonly body?: string | object;
  /** Sent after the head, piece by piece as it yields (server-sent events), instead of `body`; stopped when the client goes away. */
  readonly stream?: (closed: AbortSignal) => AsyncIterable<string>;
}

export interface LocalServer {
  /** http://127.0.0.1:<port> */
  readonly origin: string;
  close(): Promise<void>;
}

/** An HTTP server on an ephemeral loopback port that answers each request with `handle`. */
export async function startLocalServer(handle: (request: LocalRequest) => LocalResponse | Promise<LocalResponse>): Promise<LocalServer> {
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const raw = Buffer.concat(chunks);
      let answer: LocalResponse;
      try {
        answer = await handle({
          method: request.method ?? 'GET',
          path: (request.url ?? '/').split('?')[0]!,
          query: new URL(request.url ?? '/', 'http://127.0.0.1').searchParams,
          headers: request.headers,
          body: raw.toString('utf8'),
          raw,
        });
      } catch (error) {
        answer = { status: 500, body: { error: messageOf(error) } };
      }
      const json = typeof answer.body === 'object';
      response.writeHead(answer.status, { ...(json ? { 'content-type': 'application/json' } : {}), ...answer.headers });
      if (answer.stream !== undefined) {
        await writeStream(response, answer.stream);
        return;
      }
      response.end(json ? JSON.stringify(answer.body) : answer.body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes each piece `stream` yields as it comes, until the stream ends or the client goes away. */
async function writeStream(response: ServerResponse, stream: (closed: AbortSignal) => AsyncIterable<string>): Promise<void> {
  // Aborted when the client goes away before the end: the producer can stop waiting.
  const closed = new AbortController();
  response.on('close', () => {
    if (!response.writableFinished) closed.abort();
  });
  response.flushHeaders();
  try {
    for await (const piece of stream(closed.signal)) {
      if (response.destroyed || response.writableEnded) break;
      response.write(piece);
    }
  } catch (error) {
    response.destroy(error instanceof Error ? error : new Error(messageOf(error)));
    return;
  }
  if (!response.destroyed) response.end();
}

/** A request body as JSON or as a form, whichever its content type says. */
export function parseBody(request: LocalRequest): Record<string, unknown> {
  const type = request.headers['content-type'] ?? '';
  if (type.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(request.body));
  return request.body === '' ? {} : (JSON.parse(request.body) as Record<string, unknown>);
}
