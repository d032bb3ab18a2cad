import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../../../src/testing/fake-openai.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import { until } from '../../helpers/gateway.js';
import { CHAT_A, llmAgent, llmConfig, whereTool } from './fixtures.js';
import { startTurn } from './run-turn.js';

const telemetry = installTestTelemetry();

let model: FakeOpenAI | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** A gate a stream waits on before one of its pieces. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe('LlmAgent streaming', () => {
  it('fails the turn with a timeout when the model stalls mid-stream past THREADLINE_LLM_TIMEOUT_MS', async () => {
    const never = gate();
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text('one two'), { pieces: ['one ', 'two'], before: (index) => (index === 1 ? never.wait : undefined) }),
    );
    const run = startTurn(llmAgent(llmConfig(model.baseUrl, { timeoutMs: 300 }), []), CHAT_A, 'count');
    const error = await run.done.then(() => undefined, (failure: unknown) => failure);
    expect(error).toMatchObject({ code: 'TL_LLM_FAILED', message: expect.stringMatching(/did not answer within 300 ms \(THREADLINE_LLM_TIMEOUT_MS\)/) });
    expect(run.progress).toEqual(['one ']);
    never.open();
  });

  it('asks for a stream, shows the answer as it is written, and replies the final text once', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.streamed(FakeOpenAI.text('one two three'), { pieces: ['one ', 'two ', 'three'] }));
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), []), CHAT_A, 'count');
    await run.done;
    expect(model.requests[0]!.body.stream).toBe(true);
    expect(run.progress).toEqual(['one ', 'one two ', 'one two three']);
    expect(run.replies.map((reply) => reply.text)).toEqual(['one two three']);
    const chat = telemetry.spans(run.traceId).find((span) => span.name === 'chat test-model');
    expect(chat?.attributes['gen_ai.usage.output_tokens']).toBe(5);
    expect(chat?.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
  });

  it('replies the text said with tool calls before the tools run, then the answer', async () => {
    const repliesWhenToolRan: string[][] = [];
    const where = whereTool();
    const tool = { ...where, run: async (...args: Parameters<typeof where.run>) => {
      repliesWhenToolRan.push(run.replies.map((reply) => reply.text));
      return where.run(...args);
    } };
    model = await FakeOpenAI.start(({ body }) =>
      body.messages.at(-1)?.role === 'tool'
        ? FakeOpenAI.streamed(FakeOpenAI.text('You are in chat-a.'))
        : FakeOpenAI.streamed(FakeOpenAI.toolCalls([{ name: 'where', arguments: {} }], { content: 'Let me look…' })),
    );
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [tool]), CHAT_A, 'where am I?');
    await run.done;
    expect(repliesWhenToolRan).toEqual([['Let me look…']]);
    expect(run.replies.map((reply) => reply.text)).toEqual(['Let me look…', 'You are in chat-a.']);
    // The call streamed as deltas arrived whole, and its result went back to the model.
    expect(model.requests[1]!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'chat chat-a' });
  });

  it('stops the stream when the turn is stopped mid-answer, and says nothing more', async () => {
    const held = gate();
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.text('one two three'), { pieces: ['one ', 'two ', 'three'], before: (index) => (index === 2 ? held.wait : undefined) }),
    );
    const stop = new AbortController();
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), []), CHAT_A, 'count', { signal: stop.signal });
    await until(() => run.progress.length === 2);
    stop.abort();
    await run.done;
    await until(() => model!.streams.abandoned === 1);
    held.open();
    expect(model.streams.finished).toBe(0);
    expect(run.progress).toEqual(['one ', 'one two ']);
    expect(run.replies).toEqual([]);
  });
});
