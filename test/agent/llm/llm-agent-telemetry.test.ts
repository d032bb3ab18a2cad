import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { FakeOpenAI, type FakeChatRequest } from '../../../src/testing/fake-openai.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import { CHAT_A, failingTool, llmAgent, llmConfig, memoryLogger, whereTool } from './fixtures.js';
import { startTurn } from './run-turn.js';

const telemetry = installTestTelemetry();
let model: FakeOpenAI | undefined;

afterEach(async () => {
  await model?.close();
  model = undefined;
});

function callThenAnswer(request: FakeChatRequest) {
  return request.body.messages.at(-1)!.role === 'tool'
    ? FakeOpenAI.text('done', { usage: { inputTokens: 42, outputTokens: 7 } })
    : FakeOpenAI.toolCalls([{ name: 'where' }, { name: 'remind', arguments: { minutes: 3 } }], { usage: { inputTokens: 30, outputTokens: 12 } });
}

function named(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

/** The rejection of `promise`, which must reject. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('LlmAgent telemetry', () => {
  it('makes a chat <model> span per request and execute_tool spans, all under agent.turn', async () => {
    model = await FakeOpenAI.start(callThenAnswer);
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [whereTool(), failingTool]), CHAT_A, 'go');
    await run.done;
    const spans = telemetry.spans(run.traceId);
    const [turn] = named(spans, 'agent.turn');
    const chats = named(spans, 'chat test-model');
    expect(chats).toHaveLength(2);
    const port = Number(new URL(model.baseUrl).port);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(chat.parentSpanContext?.spanId).toBe(turn!.spanContext().spanId);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'test-model',
        'gen_ai.response.model': 'test-model',
        'server.address': '127.0.0.1',
        'server.port': port,
      });
      expect(chat.attributes['gen_ai.response.id']).toMatch(/^chatcmpl-fake-/);
    }
    expect(chats[0]!.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 12,
    });
    expect(chats[1]!.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 42,
      'gen_ai.usage.output_tokens': 7,
    });
    const tools = spans.filter((span) => span.name.startsWith('execute_tool '));
    expect(tools.map((span) => span.name)).toEqual(['execute_tool where', 'execute_tool remind']);
    for (const tool of tools) expect(tool.parentSpanContext?.spanId).toBe(turn!.spanContext().spanId);
    expect(tools[0]!.attributes['gen_ai.tool.call.id']).toMatch(/^call_/);
    expect(tools[1]!.attributes['error.type']).toBe('TL_TOOL_LIMIT');
  });

  it('sends the chat span as traceparent and the session chat id as baggage, per the outbound policy', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('hi'));
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), []), CHAT_A, 'hello');
    await run.done;
    const [chat] = named(telemetry.spans(run.traceId), 'chat test-model');
    const { headers } = model.requests[0]!;
    expect(headers.traceparent).toBe(`00-${run.traceId}-${chat!.spanContext().spanId}-01`);
    const baggage = new Map(
      String(headers.baggage)
        .split(',')
        .map((member) => member.split('=').map((part) => decodeURIComponent(part.trim())) as [string, string]),
    );
    expect(baggage.get('chat.id')).toBe('chat-a');
    expect(baggage.get('chat.thread.id')).toBe('t-1');
    // user.id is not in the default outbound policy: it stays in the process.
    expect(baggage.has('user.id')).toBe(false);
  });

  it('sends the API key to the endpoint and nowhere else: not in spans, logs or errors', async () => {
    const key = 'sk-test-key-0123456789';
    // The fake quotes a wrong key back in full, as a careless provider would.
    model = await FakeOpenAI.start(callThenAnswer, { apiKey: key });
    const { logger, lines } = memoryLogger();
    const ok = startTurn(llmAgent(llmConfig(model.baseUrl, { apiKey: key }), [whereTool(), failingTool], { logger }), CHAT_A, 'go');
    await ok.done;
    expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    const wrongKey = 'wrong-key-9876543210';
    const refused = startTurn(llmAgent(llmConfig(model.baseUrl, { apiKey: wrongKey }), [], { logger }), CHAT_A, 'go');
    const error = await rejectionOf(refused.done);
    expect(error).toBeInstanceOf(ThreadlineError);
    expect((error as ThreadlineError).code).toBe('TL_LLM_FAILED');
    expect((error as ThreadlineError).message).toMatch(/^The model endpoint answered 401 .*; check THREADLINE_LLM_API_KEY$/);
    const everything = [
      JSON.stringify(telemetry.spans().map((span) => ({ attributes: span.attributes, events: span.events, status: span.status, name: span.name }))),
      lines.join('\n'),
      (error as Error).message,
      String((error as Error).stack),
      JSON.stringify(error),
    ].join('\n');
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(wrongKey);
    expect(everything).not.toContain('0123456789');
    expect(everything).not.toContain('9876543210');
  });

  it('turns a 500 answered twice (the request and its one retry) into TL_LLM_FAILED with error.type on the span', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('never'));
    model.failNext(500, 2, 'the model is overloaded');
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), []), CHAT_A, 'hello');
    const error = (await rejectionOf(run.done)) as ThreadlineError;
    expect(error.code).toBe('TL_LLM_FAILED');
    expect(error.message).toBe('The model endpoint answered 500 (the model is overloaded)');
    expect(model.requests).toHaveLength(2);
    const [chat] = named(telemetry.spans(run.traceId), 'chat test-model');
    expect(chat!.attributes['error.type']).toBe('500');
    expect(chat!.status.code).toBe(2);
    expect(run.replies).toEqual([]);
  });

  it('retries a 500 once and goes on when the retry succeeds', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('second time lucky'));
    model.failNext(503);
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), []), CHAT_A, 'hello');
    await run.done;
    expect(run.replies[0]!.text).toBe('second time lucky');
    expect(model.requests).toHaveLength(2);
  });

  it('says which setting to check when the endpoint cannot be reached', async () => {
    const gone = await FakeOpenAI.start(() => FakeOpenAI.text('x'));
    const baseUrl = gone.baseUrl;
    await gone.close();
    const run = startTurn(llmAgent(llmConfig(baseUrl), []), CHAT_A, 'hello');
    const error = (await rejectionOf(run.done)) as ThreadlineError;
    expect(error.code).toBe('TL_LLM_FAILED');
    expect(error.message).toMatch(/^The model endpoint \(THREADLINE_LLM_BASE_URL\) could not be reached/);
    const [chat] = named(telemetry.spans(run.traceId), 'chat test-model');
    expect(chat!.attributes['error.type']).toBe('connection_error');
  });

  it('says so when the endpoint does not answer within the timeout', async () => {
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    model = await FakeOpenAI.start(async () => {
      await held;
      return FakeOpenAI.text('late');
    });
    const run = startTurn(llmAgent(llmConfig(model.baseUrl, { timeoutMs: 150 }), []), CHAT_A, 'hello');
    const error = (await rejectionOf(run.done)) as ThreadlineError;
    release();
    expect(error.message).toBe('The model endpoint did not answer within 150 ms (THREADLINE_LLM_TIMEOUT_MS)');
    const [chat] = named(telemetry.spans(run.traceId), 'chat test-model');
    expect(chat!.attributes['error.type']).toBe('timeout');
  });
});
