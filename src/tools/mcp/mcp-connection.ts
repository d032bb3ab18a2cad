import { trace } from '@opentelemetry/api';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../../errors.js';
import { redactText, safeUrl } from '../../text/redact-secrets.js';
import { VERSION } from '../../version.js';
import { isStdioServer, type McpServerConfig } from './mcp-servers-config.js';
import { mcpFetch } from './mcp-fetch.js';

const STDERR_LINE_CHARS = 500;

/** A connected MCP server, and what its `tools/call` spans say about the connection. */
export interface McpConnection {
  /** Its name in the configuration. */
  readonly server: string;
  readonly client: Client;
  /** `pipe` for stdio, `tcp` for Streamable HTTP. */
  readonly networkTransport: 'pipe' | 'tcp';
  /** For Streamable HTTP: where it listens, and its URL (outboundHeaders applies that host's baggage policy). */
  readonly http?: { readonly url: URL; readonly address: string; readonly port: number } | undefined;
  /** Negotiated at connect. */
  protocolVersion(): string | undefined;
  /** The `Mcp-Session-Id` a stateful HTTP server gave, if any. */
  sessionId(): string | undefined;
  close(): Promise<void>;
}

/**
 * Starts (stdio) or reaches (HTTP) one configured server and initializes the session.
 * TL_CONFIG_INVALID naming the server when it cannot: a configured tool source that is missing
 * is a configuration error, so the gateway does not start without it.
 */
export async function connectMcpServer(server: string, config: McpServerConfig, options: { readonly timeoutMs: number; readonly logger: Logger }): Promise<McpConnection> {
  const transport = isStdioServer(config) ? stdioTransport(server, config, options.logger) : httpTransport(config.url, config.headers);
  let protocolVersion: string | undefined;
  observe(transport, (version) => (protocolVersion = version));
  const client = new Client({ name: 'threadline', version: VERSION });
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    const where = isStdioServer(config) ? `command ${JSON.stringify(config.command)}` : safeUrl(config.url);
    throw new ThreadlineError('TL_CONFIG_INVALID', `MCP server "${server}" (${where}) did not connect: ${redactText(messageOf(error)).slice(0, 300)}`, { cause: error });
  }
  const url = isStdioServer(config) ? undefined : new URL(config.url);
  return {
    server,
    client,
    networkTransport: url === undefined ? 'pipe' : 'tcp',
    http: url === undefined ? undefined : { url, address: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) },
    protocolVersion: () => protocolVersion,
    sessionId: () => (transport instanceof StreamableHTTPClientTransport ? transport.sessionId : undefined),
    close: () => client.close(),
  };
}

function stdioTransport(server: string, config: Extract<McpServerConfig, { command: string }>, logger: Logger): StdioClientTransport {
  // env: the SDK adds its defaults (HOME, PATH, ...) under these, never the gateway's own variables.
  const transport = new StdioClientTransport({
    command: config.command,
    args: [...(config.args ?? [])],
    env: { ...config.env },
    ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    stderr: 'pipe',
  });
  // Drained, or a chatty server blocks on a full pipe; at debug, as the server's own words.
  transport.stderr?.on('data', (chunk: Buffer) => logger.debug({ mcpServer: server }, redactText(chunk.toString('utf8')).slice(0, STDERR_LINE_CHARS)));
  return transport;
}

function httpTransport(url: string, headers: Readonly<Record<string, string>> | undefined): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { ...headers } }, fetch: mcpFetch() });
}

/**
 * Watches what the client sends: the JSON-RPC id of a `tools/call` goes on the active span (the
 * SDK sends synchronously inside the call, so that is its `tools/call` span), and the protocol
 * version the client negotiates (which it tells any transport having setProtocolVersion) is kept.
 */
function observe(transport: Transport, onVersion: (version: string) => void): void {
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
