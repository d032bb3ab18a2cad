import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../../errors.js';
import { safeUrl } from '../../text/redact-secrets.js';
import { mcpRedactor } from './mcp-redactor.js';
import { VERSION } from '../../version.js';
import { isStdioServer, type McpServerConfig } from './mcp-servers-config.js';
import { httpTransport, observe, stdioTransport } from './mcp-transport.js';

/** A connected MCP server, and what its `tools/call` spans say about the connection. */
export interface McpConnection {
  /** Its name in the configuration. */
  readonly server: string;
  readonly client: Client;
  /** `pipe` for stdio, `tcp` for Streamable HTTP. */
  readonly networkTransport: 'pipe' | 'tcp';
  /** Known secrets and the server's configured header or env values cut out of a text it sent. */
  readonly redact: (text: string) => string;
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
  const redact = mcpRedactor(config);
  const transport = isStdioServer(config) ? stdioTransport(server, config, options.logger, redact) : httpTransport(config.url, config.headers);
  let protocolVersion: string | undefined;
  observe(transport, (version) => (protocolVersion = version));
  const client = new Client({ name: 'threadline', version: VERSION });
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    const where = isStdioServer(config) ? `command ${JSON.stringify(config.command)}` : safeUrl(config.url);
    throw new ThreadlineError('TL_CONFIG_INVALID', `MCP server "${server}" (${where}) did not connect: ${redact(messageOf(error)).slice(0, 300)}`, { cause: error });
  }
  const url = isStdioServer(config) ? undefined : new URL(config.url);
  return {
    server,
    client,
    networkTransport: url === undefined ? 'pipe' : 'tcp',
    redact,
    http: url === undefined ? undefined : { url, address: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) },
    protocolVersion: () => protocolVersion,
    sessionId: () => (transport instanceof StreamableHTTPClientTransport ? transport.sessionId : undefined),
    close: () => client.close(),
  };
}
