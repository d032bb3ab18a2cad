import { afterEach, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../../../src/testing/fake-openai.js';
import { until } from '../../helpers/gateway.js';

let model: FakeOpenAI | undefined;

afterEach(async () => {
  await model?.close();
  model = undefined;
});

async function post(body: unknown, headers: Record<string, string> = {}, path = '/chat/completions'): Promise<{ status: number; body: any }> {
  const response = await fetch(`${model!.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const hello = { model: 'm', messages: [{ role: 'user', content: 'hello' }] };

describe('FakeOpenAI', () => {
  it('answers from the script, with the request model and usage, and records the request', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('hi', { usage: { inputTokens: 3, outputTokens: 1 } }));
    const answer = await post(hello, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'chat.completion',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    });
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]!.body).toEqual(hello);
    expect(model.requests[0]!.headers.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(FakeOpenAI.lastUserText(model.requests[0]!)).toBe('hello');
  });

  it('builds tool calls with JSON arguments, or the string given', () => {
    const answer = FakeOpenAI.toolCalls([{ name: 'a', arguments: { x: 1 }, id: 'c1' }, { name: 'b', arguments: '{bad' }]);
    expect(answer.choices[0]!.finish_reason).toBe('tool_calls');
    expect(answer.choices[0]!.message.tool_calls).toEqual([
      { id: 'c1', type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
      { id: expect.stringMatching(/^call_\d+$/), type: 'function', function: { name: 'b', arguments: '{bad' } },
    ]);
  });

  it('fails the next requests with failNext, then answers again', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    model.failNext(503, 2, 'busy');
    expect(await post(hello)).toEqual({ status: 503, body: { error: { message: 'busy', type: 'server_error', param: null, code: null } } });
    expect((await post(hello)).status).toBe(503);
    expect((await post(hello)).status).toBe(200);
  });

  it('refuses, as the real API does, a tool result that answers no call and a call left without a result', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    const orphan = await post({ model: 'm', messages: [{ role: 'tool', tool_call_id: 'x', content: 'r' }] });
    expect(orphan.status).toBe(400);
    expect(orphan.body.error.message).toMatch(/must be a response to a preceding message with 'tool_calls'/);
    const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const unanswered = await post({ model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: [call] }, { role: 'user', content: 'x' }] });
    expect(unanswered.status).toBe(400);
    expect(unanswered.body.error.message).toMatch(/missing: c1/);
  });

  it('refuses a wrong key when started with one, and unknown paths', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'), { apiKey: 'right' });
    expect((await post(hello, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post(hello, { authorization: 'Bearer right' })).status).toBe(200);
    expect((await post(hello, {}, '/embeddings')).status).toBe(404);
  });
});

describe('FakeOpenAI streaming', () => {
  it('streams when asked: content in its pieces, tool calls as deltas, usage, [DONE]; whole otherwise', async () => {
    const OpenAI = (await import('openai')).default;
    model = await FakeOpenAI.start(() =>
      FakeOpenAI.streamed(FakeOpenAI.toolCalls([{ name: 'where', arguments: { deep: true }, id: 'c9' }], { content: 'Let me look' }), { pieces: ['Let ', 'me ', 'look'] }),
    );
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content ?? '')).filter((text) => text !== '')).toEqual(['Let ', 'me ', 'look']);
    const deltas = chunks.flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(deltas[0]).toMatchObject({ index: 0, id: 'c9', function: { name: 'where' } });
    expect(deltas.map((delta) => delta.function?.arguments).join('')).toBe('{"deep":true}');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    expect(model.streams).toEqual({ started: 1, finished: 1, abandoned: 0 });
    // The same script, asked without stream, answers the completion whole.
    const whole = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(whole.choices[0]!.message).toMatchObject({ content: 'Let me look', tool_calls: [{ id: 'c9' }] });
  });

  it('holds a piece until the test lets it go, and counts a stream the client left', async () => {
    const OpenAI = (await import('openai')).default;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    model = await FakeOpenAI.start(() => FakeOpenAI.streamed(FakeOpenAI.text('a b'), { before: (index) => (index === 1 ? held : undefined) }));
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'k', maxRetries: 0 });
    const stop = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: stop.signal });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) {
        seen.push(chunk.choices[0]?.delta.content ?? '');
        if (seen.join('') === 'a ') stop.abort();
      }
    })().catch(() => undefined);
    await reading;
    await until(() => model!.streams.abandoned === 1);
    release();
    expect(model.streams).toMatchObject({ started: 1, finished: 0, abandoned: 1 });
  });
});
