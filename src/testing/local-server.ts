import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { messageOf } from '../errors.js';

export interface LocalRequest {
  readonly method: string;
  readonly path: string;
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
          headers: request.headers,
          body: raw.toString('utf8'),
          raw,
        });
      } catch (error) {
        answer = { status: 500, body: { error: messageOf(error) } };
      }
      const json = typeof answer.body === 'object';
      response.writeHead(answer.status, { ...(json ? { 'content-type': 'application/json' } : {}), ...answer.headers });
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

/** A request body as JSON or as a form, whichever its content type says. */
export function parseBody(request: LocalRequest): Record<string, unknown> {
  const type = request.headers['content-type'] ?? '';
  if (type.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(request.body));
  return request.body === '' ? {} : (JSON.parse(request.body) as Record<string, unknown>);
}
