import { afterEach, describe, expect, it } from 'vitest';
import { commandsFirst } from '../../../src/gateway/commands/commands-first.js';
import { FakeOpenAI } from '../../../src/testing/fake-openai.js';
import { installTestTelemetry } from '../../../src/testing/test-telemetry.js';
import { CHAT_A, commandAgent, llmAgent, llmConfig } from '../../agent/llm/fixtures.js';
import { startTurn } from '../../agent/llm/run-turn.js';

installTestTelemetry();

let model: FakeOpenAI | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe('commandsFirst', () => {
  it('sends commands to the command agent, not to the model', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('model'));
    const commands = commandAgent();
    const run = startTurn(commandsFirst(commands, llmAgent(llmConfig(model.baseUrl), [])), CHAT_A, '/status');
    await run.done;
    expect(commands.handled).toEqual(['/status']);
    expect(run.replies.map((reply) => reply.text)).toEqual(['command /status']);
    expect(model.requests).toHaveLength(0);
  });

  it('sends any other text to the agent behind it', async () => {
    model = await FakeOpenAI.start(() => FakeOpenAI.text('model'));
    const commands = commandAgent();
    const run = startTurn(commandsFirst(commands, llmAgent(llmConfig(model.baseUrl), [])), CHAT_A, 'hello');
    await run.done;
    expect(commands.handled).toEqual([]);
    expect(run.replies.map((reply) => reply.text)).toEqual(['model']);
    expect(model.requests).toHaveLength(1);
  });
});
