import { trace } from '@opentelemetry/api';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from 'pino';
import type { StdioMcpServer } from './mcp-servers-config.js';
import { tracedFetch } from '../../telemetry/traced-fetch.js';

const STDERR_LINE_CHARS = 500;

/** A child process on stdio, given only its configured environment. */
export function stdioTransport(server: string, config: StdioMcpServer, logger: Logger, redact: (text: string) => string): StdioClientTransport {
  // env: the SDK adds its defaults (HOME, PATH, ...) under these, never the gateway's own variables.
  const transport = new StdioClientTransport({
    command: config.command,
    args: [...(config.args ?? [])],
    env: { ...config.env },
    ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    stderr: 'pipe',
  });
  // Drained, or a chatty server blocks on a full pipe; at debug, as the server's own words.
  transport.stderr?.on('data', (chunk: Buffer) => logger.debug({ mcpServer: server }, redact(chunk.toString('utf8')).slice(0, STDERR_LINE_CHARS)));
  return transport;
}

/** Streamable HTTP, the trace context and allowed baggage added to each request by tracedFetch. */
export function httpTransport(url: string, headers: Readonly<Record<string, string>> | undefined): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { ...headers } }, fetch: tracedFetch() });
}

/**
 * Watches what the client sends: the JSON-RPC id of a `tools/call` goes on the active span (the
 * SDK sends synchronously inside the call, so that is its `tools/call` span), and the protocol
 * version the client negotiates (which it tells any transport having setProtocolVersion) is kept.
 */
export function observe(transport: Transport, onVersion: (version: string) => void): void {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ('method' in message && message.method === 'tools/call' && 'id' in message) {
      trace.getActiveSpan()?.setAttribute('jsonrpc.request.id', String(message.id));
    }
    return send(message, options);
  };
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    onVersion(version);
    setVersion?.(version);
  };
}
