import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

/** What the test server's `routing` tool answers (as JSON text): the routing the call carried. */
export interface ReceivedRouting {
  /** From `params._meta`. */
  readonly meta: { readonly traceparent?: string; readonly tracestate?: string; readonly baggage?: string };
  /** `_meta.baggage`, decoded: `chat.id`, `chat.thread.id`, ... */
  readonly baggage: Readonly<Record<string, string>>;
  /** The trace headers of the HTTP request (none over stdio). */
  readonly headers: { readonly traceparent?: string; readonly tracestate?: string; readonly baggage?: string };
  /** The names of the server process's environment variables (a stdio server gets only its configured ones, and a few defaults). */
  readonly environment: readonly string[];
  /** The server's process id (the test's own over HTTP), to stop a stdio server. */
  readonly pid: number;
  /** The `note` argument, echoed. */
  readonly note?: string;
}

/** How to run the test server over stdio, as an MCP server entry: `{ command, args }`. */
export interface StdioCommand {
  readonly command: string;
  readonly args: readonly string[];
}

export interface TestMcpServer {
  /** The Streamable HTTP endpoint, `http://127.0.0.1:<port>/mcp` (stateless: no session id). */
  readonly url: string;
  /** The same server over stdio, in a child process. */
  readonly stdio: StdioCommand;
  close(): Promise<void>;
}

/**
 * The test MCP server: `routing` reports the routing its call received (see ReceivedRouting),
 * `fail` answers `isError` with its `reason`, `wait` answers after `ms` (or when cancelled). Made afresh for each HTTP request and once for stdio.
 */
export function testMcpServer(): McpServer {
  const server = new McpServer({ name: 'threadline-test', version: '1.0.0' });
  server.registerTool(
    'routing',
    { description: 'Reports the trace context and baggage this call carried', inputSchema: { note: z.string().optional() } },
    ({ note }, extra) => {
      const meta = (extra._meta ?? {}) as Record<string, unknown>;
      const routing: ReceivedRouting = {
        meta: pick(meta),
        baggage: decodeBaggage(typeof meta['baggage'] === 'string' ? meta['baggage'] : ''),
        headers: pick(extra.requestInfo?.headers ?? {}),
        environment: Object.keys(process.env).sort(),
        pid: process.pid,
        ...(note === undefined ? {} : { note }),
      };
      return { content: [{ type: 'text', text: JSON.stringify(routing) }] };
    },
  );
  server.registerTool('fail', { description: 'Fails with the reason given', inputSchema: { reason: z.string() } }, ({ reason }) => ({
    isError: true,
    content: [{ type: 'text', text: reason }],
  }));
  server.registerTool(
    'wait',
    { description: 'Answers after `ms` milliseconds, or as soon as the call is cancelled', inputSchema: { ms: z.number().int().min(0).max(600_000) } },
    async ({ ms }, extra) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => resolve(clearTimeout(timer)), { once: true });
      });
      return { content: [{ type: 'text', text: extra.signal.aborted ? 'cancelled' : `waited ${ms} ms` }] };
    },
  );
  return server;
}

/** Starts the test server on an ephemeral loopback port; `stdio` runs it as a child process instead. */
export async function startTestMcpServer(): Promise<TestMcpServer> {
  const http: Server = createServer((request, response) => {
    if (request.url !== '/mcp') return void response.writeHead(404).end();
    // Stateless: no server-sent stream to open with GET.
    if (request.method !== 'POST') return void response.writeHead(405, { allow: 'POST' }).end();
    const server = testMcpServer();
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    response.on('close', () => void server.close());
    server
      .connect(transport)
      .then(() => transport.handleRequest(request, response))
      .catch(() => response.headersSent || response.writeHead(500).end());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    stdio: testMcpStdioCommand(),
    close: () => {
      http.closeAllConnections();
      return new Promise((resolve) => http.close(() => resolve()));
    },
  };
}

/**
 * The test server over stdio: `node <dist/testing/test-mcp-stdio-server.js>`. Run from source
 * (vitest on src/), the built copy in dist/, which `npm run build` makes.
 */
export function testMcpStdioCommand(): StdioCommand {
  const fromSource = import.meta.url.endsWith('.ts');
  const script = new URL(fromSource ? '../../dist/testing/test-mcp-stdio-server.js' : './test-mcp-stdio-server.js', import.meta.url);
  return { command: process.execPath, args: [decodeURIComponent(script.pathname)] };
}

function pick(source: Record<string, unknown> | IncomingHttpHeaders): ReceivedRouting['headers'] {
  const picked: Record<string, string> = {};
  for (const key of ['traceparent', 'tracestate', 'baggage']) {
    const value = source[key];
    if (typeof value === 'string') picked[key] = value;
  }
  return picked;
}

function decodeBaggage(header: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const member of header.split(',')) {
    const [pair = ''] = member.split(';');
    const separator = pair.indexOf('=');
    if (separator > 0) entries[decodeURIComponent(pair.slice(0, separator).trim())] = decodeURIComponent(pair.slice(separator + 1).trim());
  }
  return entries;
}
