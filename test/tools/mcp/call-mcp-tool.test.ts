import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../../../src/testing/index.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import { callMcpTool } from '../../../src/tools/mcp/call-mcp-tool.js';
import { connectMcpServer, type McpConnection } from '../../../src/tools/mcp/mcp-connection.js';

const telemetry = installTestTelemetry();
const logger = pino({ level: 'silent' });
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((each) => each.close()));
});

async function connected(): Promise<McpConnection> {
  const server: TestMcpServer = await startTestMcpServer();
  opened.push(server);
  const connection = await connectMcpServer('remote', { url: server.url }, { timeoutMs: 10_000, logger });
  opened.unshift(connection);
  return connection;
}

describe('callMcpTool', () => {
  it('stops a call when its signal aborts, as TL_TOOL_FAILED on its span', async () => {
    const connection = await connected();
    const controller = new AbortController();
    const call = callMcpTool(connection, 'wait', { ms: 600_000 }, { signal: controller.signal }, 60_000);
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: 'TL_TOOL_FAILED', message: 'wait on MCP server "remote" was stopped' });
    const span = telemetry.spans().findLast((each) => each.name === 'tools/call wait')!;
    expect(span.attributes['error.type']).toBe('TL_TOOL_FAILED');
  });

  it('gives up on a call after the timeout, naming the setting', async () => {
    const connection = await connected();
    const call = callMcpTool(connection, 'wait', { ms: 600_000 }, { signal: new AbortController().signal }, 200);
    await expect(call).rejects.toMatchObject({ code: 'TL_TOOL_FAILED', message: expect.stringMatching(/gave no answer within 200 ms \(THREADLINE_MCP_TIMEOUT_MS\)/) });
  });

  it("answers with the result's text", async () => {
    const connection = await connected();
    await expect(callMcpTool(connection, 'wait', { ms: 0 }, { signal: new AbortController().signal }, 10_000)).resolves.toBe('waited 0 ms');
  });
});
