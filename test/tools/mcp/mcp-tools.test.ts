import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpToolInfo } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { McpConnection } from '../../../src/tools/mcp/mcp-connection.js';
import { mcpTools } from '../../../src/tools/mcp/mcp-tools.js';

const OBJECT = { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] };

/** A connection whose server lists `pages` of tools, one page a tools/list. */
function listing(server: string, pages: McpToolInfo[][]): McpConnection {
  let page = 0;
  const client = {
    listTools: async (params?: { cursor?: string }) => {
      expect(params?.cursor).toBe(page === 0 ? undefined : String(page));
      const tools = pages[page]!;
      page += 1;
      return { tools, ...(page < pages.length ? { nextCursor: String(page) } : {}) };
    },
  };
  return { server, client: client as unknown as Client, networkTransport: 'pipe', redact: (text: string) => text, http: undefined, protocolVersion: () => undefined, sessionId: () => undefined, close: async () => {} };
}

function memoryLogger(): { logger: pino.Logger; warnings: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  return { logger, warnings: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('mcpTools', () => {
  it('names each tool <server>__<tool> within [A-Za-z0-9_-]{1,64}, over every page, with its input schema', async () => {
    const { logger } = memoryLogger();
    const long = 'x'.repeat(100);
    const tools = await mcpTools(
      listing('files.v2', [
        [{ name: 'read file', description: 'Reads a file', inputSchema: OBJECT }],
        [{ name: long, inputSchema: { type: 'object' } }],
      ]),
      { taken: new Set(), timeoutMs: 1000, logger },
    );
    expect(tools.map((tool) => tool.name)).toEqual(['files_v2__read_file', `files_v2__${long}`.slice(0, 64)]);
    expect(tools[0]!.input.jsonSchema).toEqual(OBJECT);
    expect(tools[0]!.description).toBe('Reads a file');
    expect(tools[1]!.description).toBe(`${long} on MCP server files.v2`);
    await expect(tools[0]!.input.check({}, tools[0]!.name)).rejects.toMatchObject({ code: 'TL_TOOL_INPUT' });
  });

  it('leaves out, with a warning naming it, a tool whose name is taken or whose schema Ajv cannot compile', async () => {
    const { logger, warnings } = memoryLogger();
    const taken = new Set(['s__mine']);
    const tools = await mcpTools(
      listing('s', [
        [
          { name: 'read.file', inputSchema: OBJECT },
          { name: 'read_file', inputSchema: OBJECT },
          { name: 'mine', inputSchema: OBJECT },
          { name: 'broken', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
          { name: 'fine', inputSchema: OBJECT },
        ],
      ]),
      { taken, timeoutMs: 1000, logger },
    );
    expect(tools.map((tool) => tool.name)).toEqual(['s__read_file', 's__fine']);
    expect(warnings().map((line) => [line['mcpTool'], line['tool']])).toEqual([
      ['read_file', 's__read_file'],
      ['mine', 's__mine'],
      ['broken', 's__broken'],
    ]);
    expect(String(warnings()[2]!['msg'])).toMatch(/not a JSON Schema Ajv can compile/);
    expect(taken).toEqual(new Set(['s__mine', 's__read_file', 's__fine']));
  });
});
