import type { Tool as McpToolInfo } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../../errors.js';
import { defineTool } from '../define-tool.js';
import type { Tool } from '../tool.js';
import { callMcpTool } from './call-mcp-tool.js';
import type { McpConnection } from './mcp-connection.js';
import { mcpToolName } from './mcp-tool-name.js';

/**
 * The server's tools (every page of tools/list, read once at start) as threadline tools named
 * `<server>__<tool>`. A tool whose name is in `taken`, or whose input schema cannot be used, is
 * left out with a warning naming it: one bad tool does not keep the others, or the gateway, down.
 */
export async function mcpTools(connection: McpConnection, options: { readonly taken: Set<string>; readonly timeoutMs: number; readonly logger: Logger }): Promise<Tool[]> {
  const { taken, timeoutMs, logger } = options;
  const tools: Tool[] = [];
  for (const info of await listAll(connection, timeoutMs)) {
    const name = mcpToolName(connection.server, info.name);
    const skip = (reason: string) => logger.warn({ mcpServer: connection.server, mcpTool: info.name.slice(0, 200), tool: name }, `MCP tool left out: ${reason}`);
    if (taken.has(name)) {
      skip(`another tool is named ${name}`);
      continue;
    }
    try {
      tools.push(toolOf(connection, info, name, timeoutMs));
      taken.add(name);
    } catch (error) {
      if (!(error instanceof ThreadlineError)) throw error;
      skip(messageOf(error));
    }
  }
  return tools;
}

async function listAll(connection: McpConnection, timeoutMs: number): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await connection.client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: timeoutMs });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function toolOf(connection: McpConnection, info: McpToolInfo, name: string, timeoutMs: number): Tool {
  const description = info.description?.trim() || info.title?.trim() || `${info.name} on MCP server ${connection.server}`;
  return defineTool({
    name,
    description,
    input: info.inputSchema,
    run: (args, call) => callMcpTool(connection, info.name, args, call, timeoutMs),
  });
}
