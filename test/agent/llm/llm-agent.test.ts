import * as z from 'zod';
import { defineTool } from '../../../src/tools/define-tool.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeOpenAI, type FakeChatRequest } from '../../../src/testing/fake-openai.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import type { ChatCompletionMessageParam } from '../../../src/agent/llm/model-types.js';
import { BASE_PROMPT } from '../../../src/agent/llm/llm-agent.js';
import {
  CHAT_A,
  CHAT_B,
  adminTool,
  failingTool,
  llmAgent,
  llmConfig,
  speakTool,
  whereTool,
} from './fixtures.js';
import { MemoryHistory } from './memory-history.js';
import { startTurn } from './run-turn.js';

installTestTelemetry();
let model: FakeOpenAI | undefined;

afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** The last message of a request. */
function last(request: FakeChatRequest): ChatCompletionMessageParam {
  return request.body.messages.at(-1)!;
}

/** Calls `calls` first; once a tool answered, says what the last tool answered. */
function callThenEcho(calls: Parameters<typeof FakeOpenAI.toolCalls>[0]) {
  return (request: FakeChatRequest) => {
    const message = last(request);
    return message.role === 'tool' ? FakeOpenAI.text(`tool said: ${String(message.content)}`) : FakeOpenAI.toolCalls(calls);
  };
}

describe('LlmAgent', () => {
  it('runs the tool the model calls, in the turn session, and replies with the final answer', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'where' }]));
    const where = whereTool();
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [where]), CHAT_A, 'where am I?');
    await run.done;
    expect(run.replies).toEqual([{ text: 'tool said: chat chat-a', attachment: undefined }]);
    expect(where.seen.map((session) => session?.chatId)).toEqual(['chat-a']);
    const [first, second] = model.requests;
    expect(first!.body.model).toBe('test-model');
    expect(first!.body.messages[0]).toEqual({ role: 'system', content: BASE_PROMPT });
    expect(last(first!)).toEqual({ role: 'user', content: 'where am I?' });
    expect(first!.body.tools).toEqual([
      { type: 'function', function: { name: 'where', description: 'Says which chat it runs in', parameters: { type: 'object', properties: {} } } },
    ]);
    // The second request carries the call and its result, tied by id.
    const call = second!.body.messages.at(-2) as { tool_calls: { id: string }[] };
    expect(last(second!)).toEqual({ role: 'tool', tool_call_id: call.tool_calls[0]!.id, content: 'chat chat-a' });
  });

  it('adds the skills prompt after the base prompt', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    await startTurn(llmAgent(llmConfig(model.baseUrl), [], { systemPrompt: () => 'Skill: weather' }), CHAT_A, 'hi').done;
    expect(model.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: `${BASE_PROMPT}\n\nSkill: weather` });
    // No tools: the field is left out, which the API requires of an empty list.
    expect(model.requests[0]!.body.tools).toBeUndefined();
  });

  it('returns a tool error to the model as "error: <message>"', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'remind', arguments: { minutes: 5 } }]));
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [failingTool]), CHAT_A, 'remind me');
    await run.done;
    expect(last(model.requests[1]!).content).toBe('error: this chat has 5 reminders already; remove one first');
    expect(run.replies[0]!.text).toBe('tool said: error: this chat has 5 reminders already; remove one first');
  });

  it('returns arguments that break the schema as an error (TL_TOOL_INPUT from executeTool)', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'remind', arguments: { minutes: 0 } }]));
    await startTurn(llmAgent(llmConfig(model.baseUrl), [failingTool]), CHAT_A, 'remind me').done;
    expect(String(last(model.requests[1]!).content)).toMatch(/^error: remind: .* at minutes$/);
  });

  it('answers an unknown tool and arguments that are not JSON with an error, never a crash', async () => {
    model = await FakeOpenAI.start((request) => {
      if (last(request).role === 'tool') return FakeOpenAI.text('recovered');
      return FakeOpenAI.toolCalls([{ name: 'rm_rf' }, { name: 'where', arguments: '{not json' }]);
    });
    const where = whereTool();
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [where]), CHAT_A, 'do it');
    await run.done;
    const results = model.requests[1]!.body.messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect(results).toEqual([
      'error: no tool named "rm_rf" may be called in this chat; the tools you may call are: where',
      expect.stringMatching(/^error: the arguments of where are not valid JSON \(.+\); send a JSON object$/),
    ]);
    expect(where.seen).toHaveLength(0);
    expect(run.replies[0]!.text).toBe('recovered');
  });

  it('offers an admin-only tool to admins alone; a non-admin\'s call of it is refused unrun, unasked', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'shutdown' }]));
    const stranger = startTurn(llmAgent(llmConfig(model.baseUrl), [adminTool, whereTool()]), CHAT_A, 'shut down');
    await stranger.done;
    expect(model.requests[0]!.body.tools?.map((tool) => (tool as { function: { name: string } }).function.name)).toEqual(['where']);
    expect(stranger.authorized).toEqual([]);
    expect(last(model.requests[1]!).content).toBe('error: no tool named "shutdown" may be called in this chat; the tools you may call are: where');

    model.requests.length = 0;
    const admin = startTurn(llmAgent(llmConfig(model.baseUrl), [adminTool, whereTool()]), CHAT_A, 'shut down', { admin: true });
    await admin.done;
    expect(model.requests[0]!.body.tools?.map((tool) => (tool as { function: { name: string } }).function.name)).toEqual(['shutdown', 'where']);
    // Still asked when called: the gateway's decision, not the agent's.
    expect(admin.authorized).toEqual(['shutdown']);
    expect(last(model.requests[1]!).content).toBe('stopping');
  });

  it('offers a tool only on its platforms, and a disabled tool nowhere', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    const telegramOnly = defineTool({ name: 'sticker', description: 'Sends a sticker', input: z.object({}), platforms: ['telegram'], run: () => 'sent' });
    const off = defineTool({ name: 'off', description: 'Switched off', input: z.object({}), enabled: false, run: () => 'ran' });
    const agent = llmAgent(llmConfig(model.baseUrl), [telegramOnly, off, whereTool()]);
    await startTurn(agent, CHAT_A, 'hi', { admin: true }).done;
    await startTurn(agent, CHAT_B, 'hi', { admin: true }).done;
    expect(model.requests.map((request) => request.body.tools?.map((tool) => (tool as { function: { name: string } }).function.name))).toEqual([['where'], ['sticker', 'where']]);
  });

  it('stops after maxToolRounds rounds of calls and says so', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.toolCalls([{ name: 'where' }]));
    const where = whereTool();
    const history = new MemoryHistory();
    const agent = llmAgent(llmConfig(model.baseUrl, { maxToolRounds: 2 }), [where], { history });
    const run = startTurn(agent, CHAT_A, 'loop');
    await run.done;
    expect(where.seen).toHaveLength(2);
    expect(model.requests).toHaveLength(3);
    expect(run.replies[0]!.text).toMatch(/^I stopped after 2 rounds of tool calls without a final answer \(THREADLINE_LLM_MAX_TOOL_ROUNDS\)/);
    // The next turn's conversation is one the API accepts (the fake refuses calls without results).
    await model.close();
    model = await FakeOpenAI.start(() => FakeOpenAI.text('fine'));
    const next = startTurn(llmAgent(llmConfig(model.baseUrl, { maxToolRounds: 2 }), [where], { history }), CHAT_A, 'again');
    await next.done;
    expect(next.replies[0]!.text).toBe('fine');
  });

  it('replies with the attachment of the last tool result that had one', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'speak', arguments: { text: 'first' } }, { name: 'speak', arguments: { text: 'second' } }]));
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [speakTool]), CHAT_A, 'say it');
    await run.done;
    expect(run.replies).toEqual([
      {
        text: 'tool said: voice note made',
        attachment: { filename: 'note.ogg', contentType: 'audio/ogg', dataBase64: Buffer.from('second').toString('base64') },
      },
    ]);
  });

  it('keeps the conversation in history and sends it with the next turn', async () => {
    model = await FakeOpenAI.start(callThenEcho([{ name: 'where', id: 'call_w' }]));
    const history = new MemoryHistory();
    const agent = llmAgent(llmConfig(model.baseUrl), [whereTool()], { history });
    await startTurn(agent, CHAT_A, 'first question').done;
    await startTurn(agent, CHAT_A, 'second question').done;
    const second = model.requests[2]!;
    expect(second.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_w', type: 'function', function: { name: 'where', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_w', content: 'chat chat-a' },
      { role: 'assistant', content: 'tool said: chat chat-a' },
      { role: 'user', content: 'second question' },
    ]);
  });

  it('keeps history to historyMessages entries', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('ok'));
    const history = new MemoryHistory();
    const agent = llmAgent(llmConfig(model.baseUrl, { historyMessages: 3 }), [], { history });
    for (const text of ['one', 'two', 'three']) await startTurn(agent, CHAT_A, text).done;
    const contents = model.requests[2]!.body.messages.slice(1).map((message) => message.content);
    expect(contents).toEqual(['ok', 'two', 'ok', 'three']);
  });

  it('shows mirrored entries as user messages prefixed with their source', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('seen'));
    const history = new MemoryHistory();
    await history.mirror({ platform: 'webhook', chatId: 'chat-a', threadId: 't-1' }, { role: 'assistant', text: 'build finished', source: 'cli', at: 1 }, 50);
    await history.mirror({ platform: 'webhook', chatId: 'chat-a' }, { role: 'assistant', text: 'other thread', source: 'cli', at: 2 }, 50);
    await startTurn(llmAgent(llmConfig(model.baseUrl), [], { history }), CHAT_A, 'what happened?').done;
    expect(model.requests[0]!.body.messages.slice(1)).toEqual([
      { role: 'user', content: '[from cli] build finished' },
      { role: 'user', content: 'what happened?' },
    ]);
  });

  it('keeps the conversation valid when a tool mirrors text into the chat while it runs', async () => {
    const history = new MemoryHistory();
    const mirroring = {
      ...whereTool(),
      name: 'send_message',
      run: async () => {
        // Strictly after the call was announced and before its result is recorded.
        vi.setSystemTime(2_000);
        await history.mirror({ platform: 'webhook', chatId: 'chat-a', threadId: 't-1' }, { role: 'assistant', text: 'sent from here', source: 'webhook', at: Date.now() }, 50);
        vi.setSystemTime(3_000);
        return { text: 'sent' };
      },
    };
    model = await FakeOpenAI.start(callThenEcho([{ name: 'send_message' }]));
    const agent = llmAgent(llmConfig(model.baseUrl), [mirroring], { history });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(1_000);
      await startTurn(agent, CHAT_A, 'send it').done;
    } finally {
      vi.useRealTimers();
    }
    expect([...history.sessions.values()][0]!.map((entry) => entry.at)).toEqual([1_000, 1_000, 3_000, 3_000]);
    const next = startTurn(agent, CHAT_A, 'and now?');
    await next.done;
    // The fake answers 400 to a message between a call and its result; this one was moved after it.
    expect(next.replies[0]!.text).toBe('tool said: sent');
    const roles = model.requests[2]!.body.messages.map((message) => message.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant', 'user']);
  });

  it('stops without a reply when the turn is stopped during a tool call, keeping what ran', async () => {
    const stop = new AbortController();
    const history = new MemoryHistory();
    const stopping = { ...whereTool(), run: async () => (stop.abort('stopped by /stop'), { text: 'halfway' }) };
    model = await FakeOpenAI.start(callThenEcho([{ name: 'where' }]));
    const run = startTurn(llmAgent(llmConfig(model.baseUrl), [stopping], { history }), CHAT_A, 'long job', { signal: stop.signal });
    await run.done;
    expect(run.replies).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect([...history.sessions.values()][0]!.map((entry) => entry.role)).toEqual(['user', 'assistant', 'tool']);
  });
});
