import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI, startTestMcpServer, testMcpStdioCommand, type ReceivedRouting, type TestGateway, type TestMcpServer } from '../../../src/testing/index.js';
import { names } from '../../../src/session/index.js';
import { useTestGateways } from '../../helpers/gateway.js';
import { useGlobalPropagator } from '../../helpers/propagation.js';

/** The temp dirs of the config files written, removed once the file's tests are done. */
const configDirs: string[] = [];
afterAll(() => {
  for (const dir of configDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const start = useTestGateways();
const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((server) => server.close()));
});

/** A model that calls `tool` with `args` once, then answers with what the tool told it. */
async function modelCalling(tool: string, args: Record<string, unknown>): Promise<FakeOpenAI> {
  const model = await FakeOpenAI.start(({ body }) => {
    const last = body.messages.at(-1)!;
    return last.role === 'tool' ? FakeOpenAI.text(String(last.content)) : FakeOpenAI.toolCalls([{ name: tool, arguments: args }]);
  });
  closing.push(model);
  return model;
}

async function mcpServer(): Promise<TestMcpServer> {
  const server = await startTestMcpServer();
  closing.push(server);
  return server;
}

/** Sends a message in chat `ops`, thread `deploys`; resolves with the answer's text and the message's trace id. */
async function ask(g: TestGateway): Promise<{ text: string; traceId: string }> {
  const answer = await g.send({ chat_id: 'ops', thread_id: 'deploys', chat_type: 'group', text: 'who am I?' });
  expect(answer.status).toBe(202);
  const [delivery] = await g.receiver.waitFor(1);
  return { text: delivery!.body.text, traceId: String(answer.body['trace_id']) };
}

function configFile(servers: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-mcp-'));
  configDirs.push(dir);
  const path = join(dir, 'mcp.json');
  writeFileSync(path, JSON.stringify({ mcpServers: servers }));
  return path;
}

describe('MCP servers as tool sources', () => {
  it('a stdio server (THREADLINE_MCP_SERVERS) gets the message trace and chat and thread in _meta, and only its own env', async () => {
    const model = await modelCalling('local__routing', { note: 'hi' });
    const stdio = testMcpStdioCommand();
    process.env['THREADLINE_TEST_MCP_SECRET'] = 'must-not-leak';
    try {
      const file = configFile({ local: { command: stdio.command, args: stdio.args, env: { GREETING: 'hello' } } });
      const g = await start({ llmBaseUrl: model.baseUrl, env: { THREADLINE_MCP_SERVERS: file } });
      const { text, traceId } = await ask(g);
      const routing = JSON.parse(text) as ReceivedRouting;
      expect(routing.note).toBe('hi');
      expect(routing.meta.traceparent?.split('-')[1]).toBe(traceId);
      expect(routing.baggage).toMatchObject({ [names.CHAT_ID]: 'ops', [names.CHAT_THREAD_ID]: 'deploys', [names.CHAT_PLATFORM]: 'webhook' });
      expect(routing.headers).toEqual({});
      expect(routing.environment).toContain('GREETING');
      expect(routing.environment.filter((name) => name.startsWith('THREADLINE_'))).toEqual([]);

      const spans = await g.waitForSpans(traceId, ['tools/call routing', 'execute_tool local__routing']);
      const call = spans.find((span) => span.name === 'tools/call routing')!;
      const tool = spans.find((span) => span.name === 'execute_tool local__routing')!;
      expect(call.kind).toBe(SpanKind.CLIENT);
      expect(call.parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
      // The server's parent is the tools/call span itself.
      expect(routing.meta.traceparent?.split('-')[2]).toBe(call.spanContext().spanId);
      expect(call.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'routing',
        'gen_ai.operation.name': 'execute_tool',
        'network.transport': 'pipe',
        'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
        'mcp.protocol.version': expect.any(String),
        [names.CHAT_THREAD_ID]: 'deploys',
      });
      expect(call.attributes['server.address']).toBeUndefined();
    } finally {
      delete process.env['THREADLINE_TEST_MCP_SECRET'];
    }
  });

  it('a Streamable HTTP server gets the trace and baggage in _meta and in the POST headers', async () => {
    const model = await modelCalling('remote__routing', {});
    const server = await mcpServer();
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { remote: { url: server.url, headers: { authorization: 'Bearer mcp-secret-token' } } } });
    const { text, traceId } = await ask(g);
    const routing = JSON.parse(text) as ReceivedRouting;
    expect(routing.meta.traceparent?.split('-')[1]).toBe(traceId);
    expect(routing.headers.traceparent).toBe(routing.meta.traceparent);
    expect(routing.baggage).toMatchObject({ [names.CHAT_ID]: 'ops', [names.CHAT_THREAD_ID]: 'deploys' });
    expect(routing.headers.baggage).toContain(`${names.CHAT_THREAD_ID}=deploys`);

    const [call] = (await g.waitForSpans(traceId, ['tools/call routing'])).filter((span) => span.name === 'tools/call routing');
    expect(call!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'routing',
      'network.transport': 'tcp',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(server.url).port),
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
      'mcp.protocol.version': expect.any(String),
    });
    expect(JSON.stringify(call!.attributes)).not.toContain('mcp-secret-token');
  });

  it("a server's isError is a tool error the model is told, on a failed tools/call span", async () => {
    const model = await modelCalling('remote__fail', { reason: 'the disk is full' });
    const server = await mcpServer();
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { remote: { url: server.url } } });
    const { text, traceId } = await ask(g);
    expect(text).toMatch(/fail on MCP server "remote" failed: the disk is full/);
    const [call] = (await g.waitForSpans(traceId, ['tools/call fail'])).filter((span) => span.name === 'tools/call fail');
    expect(call!.attributes['error.type']).toBe('TL_TOOL_FAILED');
  });

  it("a configured header value a server echoes is cut out of what the model is told and of the span", async () => {
    const key = 'k3y-of-any-shape-7f9a2c';
    const model = await modelCalling('remote__fail', { reason: `rejected api key ${key} for this account` });
    const server = await mcpServer();
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { remote: { url: server.url, headers: { 'x-api-key': key } } } });
    const { text, traceId } = await ask(g);
    expect(text).toMatch(/failed: rejected api key <redacted> for this account/);
    const spans = await g.waitForSpans(traceId, ['tools/call fail']);
    expect(JSON.stringify(spans.map((span) => [span.attributes, span.status, span.events]))).not.toContain(key);
  });

  it('a server down at call time is TL_TOOL_UNAVAILABLE, told to the model', async () => {
    const model = await modelCalling('remote__routing', {});
    const server = await mcpServer();
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { remote: { url: server.url } } });
    await server.close();
    const { text, traceId } = await ask(g);
    expect(text).toMatch(/MCP server "remote" cannot be reached/);
    const [call] = (await g.waitForSpans(traceId, ['tools/call routing'])).filter((span) => span.name === 'tools/call routing');
    expect(call!.attributes['error.type']).toBe('TL_TOOL_UNAVAILABLE');
  });

  it('a stdio server that has exited is TL_TOOL_UNAVAILABLE, told to the model', async () => {
    const model = await modelCalling('local__routing', {});
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { local: testMcpStdioCommand() } });
    const { pid } = JSON.parse((await ask(g)).text) as ReceivedRouting;
    process.kill(pid, 'SIGKILL');
    const answer = await g.send({ chat_id: 'ops', thread_id: 'deploys', chat_type: 'group', text: 'again?' });
    expect(answer.status).toBe(202);
    const [, delivery] = await g.receiver.waitFor(2);
    expect(delivery!.body.text).toMatch(/^error: MCP server "local" cannot be reached, so routing cannot run/);
  });

  it('a server that does not connect stops the start with TL_CONFIG_INVALID naming it, secrets left out', async () => {
    const server = await mcpServer();
    const url = server.url;
    await server.close();
    await expect(start({ mcpServers: { gone: { url: `${url}?token=url-secret`, headers: { authorization: 'Bearer header-secret' } } } })).rejects.toSatisfy(
      (error: Error & { code?: string }) =>
        error.code === 'TL_CONFIG_INVALID' && error.message.includes('MCP server "gone"') && !/url-secret|header-secret/.test(error.message),
    );
    await expect(start({ mcpServers: { missing: { command: join(tmpdir(), 'no-such-mcp-server') } } })).rejects.toMatchObject({
      code: 'TL_CONFIG_INVALID',
      message: expect.stringContaining('MCP server "missing"'),
    });
  });
});

describe('MCP servers under the outbound baggage policy', () => {
  useGlobalPropagator({
    outboundBaggage: { keys: [names.CHAT_PLATFORM, names.CHAT_ID, names.CHAT_THREAD_ID], hosts: [{ host: '127.0.0.1', keys: [names.CHAT_ID] }] },
    inboundBaggage: false,
  });

  it("an HTTP server gets only the keys its host's rule allows, in _meta and headers; a stdio server, having no host, the default keys", async () => {
    const model = await FakeOpenAI.start(({ body }) => {
      const results = body.messages.filter((message) => message.role === 'tool').map((message) => String(message.content));
      return results.length > 0 ? FakeOpenAI.text(JSON.stringify(results)) : FakeOpenAI.toolCalls([{ name: 'local__routing' }, { name: 'remote__routing' }]);
    });
    closing.push(model);
    const server = await mcpServer();
    const g = await start({ llmBaseUrl: model.baseUrl, mcpServers: { local: testMcpStdioCommand(), remote: { url: server.url } } });
    const [local, remote] = (JSON.parse((await ask(g)).text) as string[]).map((text) => JSON.parse(text) as ReceivedRouting);
    expect(local!.baggage).toEqual({ [names.CHAT_PLATFORM]: 'webhook', [names.CHAT_ID]: 'ops', [names.CHAT_THREAD_ID]: 'deploys' });
    expect(remote!.baggage).toEqual({ [names.CHAT_ID]: 'ops' });
    expect(remote!.headers.baggage).toBe(`${names.CHAT_ID}=ops`);
  });
});
