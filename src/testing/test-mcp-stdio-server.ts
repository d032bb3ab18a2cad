// The test MCP server over stdio: run as `node test-mcp-stdio-server.js` (testMcpStdioCommand() says how).
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { testMcpServer } from './test-mcp-server.js';

await testMcpServer().connect(new StdioServerTransport());
