import { Type } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { getSession, sessionEnv } from '../../../src/session/index.js';
import { FakeOpenAI, type FakeChatRequest } from '../../../src/testing/fake-openai.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import type { Tool } from '../../../src/tools/tool.js';
import { defineTool } from '../../../src/tools/define-tool.js';
import { CHAT_A, CHAT_B, llmAgent, llmConfig } from './fixtures.js';
import { MemoryHistory } from './memory-history.js';
import { startTurn } from './run-turn.js';

installTestTelemetry();
let model: FakeOpenAI | undefined;

afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** The chat.id member of a request's baggage header. */
function baggageChatId(request: FakeChatRequest): string | undefined {
  const member = String(request.headers.baggage ?? '')
    .split(',')
    .map((part) => part.trim().split('='))
    .find(([key]) => key === 'chat.id');
  return member === undefined ? undefined : decodeURIComponent(member[1]!);
}

describe('LlmAgent with two sessions at once', () => {
  it('runs each tool call in its own session while the calls interleave', async () => {
    const seen: { label: string; chatId: string | undefined; threadEnv: string }[] = [];
    let entered = (): void => {};
    const aEntered = new Promise<void>((resolve) => (entered = resolve));
    let release = (): void => {};
    const aReleased = new Promise<void>((resolve) => (release = resolve));
    const record = (label: string): void => {
      seen.push({ label, chatId: getSession()?.chatId, threadEnv: sessionEnv('THREADLINE_SESSION_THREAD_ID') ?? 'none' });
    };
    const hold: Tool = defineTool({
      name: 'hold',
      description: 'Waits',
      input: Type.Object({ label: Type.String() }),
      adminOnly: false,
      run: async (args) => {
        record(`${String(args['label'])} before`);
        entered();
        // A's call stays open while B's whole turn runs.
        if (args['label'] === 'A') await aReleased;
        record(`${String(args['label'])} after`);
        return { text: `held ${String(getSession()?.chatId)}` };
      },
    });
    // The fake tells the sessions apart by the user's text only, never by routing.
    model = await FakeOpenAI.start((request) => {
      const lastMessage = request.body.messages.at(-1)!;
      if (lastMessage.role === 'tool') return FakeOpenAI.text(`done: ${String(lastMessage.content)}`);
      return FakeOpenAI.toolCalls([{ name: 'hold', arguments: { label: FakeOpenAI.lastUserText(request) === 'from A' ? 'A' : 'B' } }]);
    });
    const agent = llmAgent(llmConfig(model.baseUrl), [hold], { history: new MemoryHistory() });
    const turnA = startTurn(agent, CHAT_A, 'from A');
    await aEntered;
    const turnB = startTurn(agent, CHAT_B, 'from B');
    await turnB.done;
    release();
    await turnA.done;
    expect(seen).toEqual([
      { label: 'A before', chatId: 'chat-a', threadEnv: 't-1' },
      { label: 'B before', chatId: 'chat-b', threadEnv: 'none' },
      { label: 'B after', chatId: 'chat-b', threadEnv: 'none' },
      { label: 'A after', chatId: 'chat-a', threadEnv: 't-1' },
    ]);
    expect(turnA.replies.map((reply) => reply.text)).toEqual(['done: held chat-a']);
    expect(turnB.replies.map((reply) => reply.text)).toEqual(['done: held chat-b']);
    // Each request left with its own session's baggage and its own trace.
    const byText = (text: string) => model!.requests.filter((request) => FakeOpenAI.lastUserText(request) === text);
    expect(byText('from A').map(baggageChatId)).toEqual(['chat-a', 'chat-a']);
    expect(byText('from B').map(baggageChatId)).toEqual(['chat-b', 'chat-b']);
    for (const request of byText('from A')) expect(String(request.headers.traceparent)).toContain(turnA.traceId);
    for (const request of byText('from B')) expect(String(request.headers.traceparent)).toContain(turnB.traceId);
  });
});
