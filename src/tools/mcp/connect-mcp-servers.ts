import type { Logger } from 'pino';
import type { Tool } from '../tool.js';
import { ThreadlineError, messageOf } from '../../errors.js';
import type { McpConnection } from './mcp-connection.js';
import type { McpServers } from './mcp-servers-config.js';
import type { mcpTools } from './mcp-tools.js';

/** The tools of every configured MCP server, and the connections to close when the gateway stops. */
export interface McpToolSources {
  readonly tools: readonly Tool[];
  close(): Promise<void>;
}

export interface ConnectMcpOptions {
  readonly logger: Logger;
  /** Each connect, tools/list and tools/call. */
  readonly timeoutMs: number;
  /** Names other tools have already: an MCP tool named so is left out. */
  readonly taken?: Iterable<string>;
}

/**
 * Connects to every server at start, all at once, and lists their tools. Fails fast: a server
 * that does not connect rejects with TL_CONFIG_INVALID naming it, the others closed.
 */
export async function connectMcpServers(servers: McpServers, options: ConnectMcpOptions): Promise<McpToolSources> {
  const entries = Object.entries(servers);
  if (entries.length === 0) return { tools: [], close: async () => {} };
  // Loaded only when a server is configured: the MCP SDK takes a sixth of a second to load.
  const [{ connectMcpServer }, { mcpTools }] = await Promise.all([import('./mcp-connection.js'), import('./mcp-tools.js')]);
  const settled = await Promise.allSettled(entries.map(([name, config]) => connectMcpServer(name, config, options)));
  const connections = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const close = async () => {
    await Promise.allSettled(connections.map((connection) => connection.close()));
  };
  try {
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const taken = new Set(options.taken);
    const tools: Tool[] = [];
    // In configuration order, so which of two same-named tools is kept does not depend on timing.
    for (const connection of connections) {
      const listed = await listedTools(mcpTools, connection, { ...options, taken });
      options.logger.info({ mcpServer: connection.server, tools: listed.length }, 'MCP server connected');
      tools.push(...listed);
    }
    return { tools, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function listedTools(list: typeof mcpTools, connection: McpConnection, options: Parameters<typeof mcpTools>[1]): Promise<Tool[]> {
  try {
    return await list(connection, options);
  } catch (error) {
    throw new ThreadlineError('TL_CONFIG_INVALID', `MCP server "${connection.server}" did not list its tools: ${connection.redact(messageOf(error)).slice(0, 300)}`, { cause: error });
  }
}
