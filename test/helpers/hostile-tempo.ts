/**
 * A hostile Tempo on loopback: every search lists `traceIds`, and each trace is answered
 * as `answer` says: a valid trace padded to `bytes` (chunked, no length declared), or a body
 * that never ends. It counts what it wrote and notices when a client hangs up.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type HostileAnswer = { readonly kind: 'padded'; readonly bytes: number } | { readonly kind: 'endless' };

export interface HostileTempo {
  readonly url: string;
  /** Trace ids (32 hex digits) each search lists. */
  readonly traceIds: readonly string[];
  /** Trace paths asked for, in order. */
  readonly traceRequests: string[];
  /** Bytes of trace bodies handed to the socket, all traces together. */
  bytesWritten(): number;
  /** Resolves with the bytes written to the endless answer when its client hung up. */
  readonly endlessClosed: Promise<number>;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Starts a hostile Tempo; `answerFor` picks each trace's answer. */
export async function startHostileTempo(options: { traces: number; startMs: number; answerFor: (traceId: string) => HostileAnswer }): Promise<HostileTempo> {
  const traceIds = Array.from({ length: options.traces }, (_, index) => (index + 1).toString(16).padStart(32, 'c'));
  const traceRequests: string[] = [];
  let written = 0;
  let endlessClosed!: (bytes: number) => void;
  const closed = new Promise<number>((resolve) => (endlessClosed = resolve));
  const server = createServer((request, response) => {
    request.resume();
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    if (path === '/api/search') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ traces: traceIds.map((traceID) => ({ traceID })), metrics: {} }));
      return;
    }
    const id = /^\/api\/traces\/([0-9a-f]{32})$/.exec(path)?.[1];
    if (id === undefined) {
      response.writeHead(404).end();
      return;
    }
    traceRequests.push(path);
    response.writeHead(200, { 'content-type': 'application/json' });
    const answer = options.answerFor(id);
    const count = (bytes: number) => (written += bytes);
    if (answer.kind === 'padded') void writePadded(response, paddedTrace(id, options.startMs), answer.bytes, count);
    else void writeEndless(response, count, endlessClosed);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    traceIds,
    traceRequests,
    bytesWritten: () => written,
    endlessClosed: closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A one-span trace as Tempo answers it, split where its padding attribute goes. */
function paddedTrace(traceId: string, startMs: number): [string, string] {
  const span = {
    traceId: Buffer.from(traceId, 'hex').toString('base64'),
    spanId: Buffer.from('bbbbbbbbbbbbbbbb', 'hex').toString('base64'),
    name: 'gateway.deliver',
    startTimeUnixNano: String(BigInt(startMs) * 1_000_000n),
    endTimeUnixNano: String(BigInt(startMs + 1) * 1_000_000n),
    attributes: [{ key: 'padding', value: { stringValue: '@PAD@' } }],
    status: {},
  };
  const body = JSON.stringify({
    batches: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'threadline' } }] }, scopeSpans: [{ scope: { name: 'threadline' }, spans: [span] }] }],
  });
  const [head, tail] = body.split('@PAD@') as [string, string];
  return [head, tail];
}

/** Writes head, padding up to `bytes` in all, then tail, minding backpressure; stops when the client hangs up. */
async function writePadded(response: ServerResponse, [head, tail]: [string, string], bytes: number, count: (bytes: number) => void): Promise<void> {
  let left = Math.max(0, bytes - head.length - tail.length);
  if (!(await write(response, Buffer.from(head), count))) return;
  while (left > 0) {
    const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
    left -= piece.length;
    if (!(await write(response, piece, count))) return;
  }
  response.end(tail);
  count(tail.length);
}

/** An answer that begins as a trace and never ends: it stops only when the client hangs up. */
async function writeEndless(response: ServerResponse, count: (bytes: number) => void, closed: (bytes: number) => void): Promise<void> {
  let mine = 0;
  const counted = (bytes: number) => {
    mine += bytes;
    count(bytes);
  };
  response.once('close', () => closed(mine));
  if (!(await write(response, Buffer.from('{"batches":[{"scopeSpans":[{"spans":[{"name":"'), counted))) return;
  while (await write(response, CHUNK, counted));
}

/** False once the client is gone (the response closed before it ended). */
async function write(response: ServerResponse, chunk: Buffer, count: (bytes: number) => void): Promise<boolean> {
  if (response.closed) return false;
  count(chunk.length);
  if (!response.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        response.off('drain', done);
        response.off('close', done);
        resolve();
      };
      response.on('drain', done);
      response.on('close', done);
    });
  }
  return !response.closed;
}
