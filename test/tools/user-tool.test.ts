// A user's own tool, as the README shows it: zod input, routing read from the context, a
// message scheduled for later that reaches its origin after a restart.
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool, getSession, withSession } from '../../src/index.js';
import { FakeOpenAI, startTestGateway, type TestGateway } from '../../src/testing/index.js';

let model: FakeOpenAI | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  await model?.close();
  gateway = model = undefined;
});

describe('a tool of your own', () => {
  it('is called by the model in the chat and thread of the message, and its later() message arrives there after a restart', async () => {
    const seen: string[] = [];
    const trackParcel = defineTool({
      name: 'track_parcel',
      description: 'Tracks a parcel and says when it arrives',
      input: z.object({ parcel: z.string().regex(/^P\d+$/), minutes: z.number().int().min(1) }),
      async run({ parcel, minutes }, call) {
        const session = getSession();
        seen.push(`${session?.chatId}/${session?.threadId}`);
        const job = await call.later!(`${parcel} has arrived`, minutes * 60_000);
        return `Tracking ${parcel}; I will say when it arrives (${job.id}).`;
      },
    });
    model = await FakeOpenAI.start((request) =>
      request.body.messages.at(-1)!.role === 'tool'
        ? FakeOpenAI.text('On it.')
        : FakeOpenAI.toolCalls([{ name: 'track_parcel', arguments: { parcel: 'P42', minutes: 30 } }]),
    );
    gateway = await startTestGateway({ clock: 'manual', llmBaseUrl: model.baseUrl, tools: [trackParcel] });
    await gateway.send({ chat_id: 'family', thread_id: 'parcels', chat_type: 'group', text: 'track P42, due in half an hour' });
    const [answer] = await gateway.receiver.waitFor(1);
    expect(answer!.body).toMatchObject({ chat_id: 'family', thread_id: 'parcels', text: 'On it.' });
    expect(seen).toEqual(['family/parcels']);
    // Its own tool's input schema went to the model as JSON Schema.
    const offered = model.requests[0]!.body.tools!.map((tool) => (tool as { function: { name: string; parameters: unknown } }).function);
    expect(offered.find((tool) => tool.name === 'track_parcel')!.parameters).toMatchObject({ type: 'object', required: ['parcel', 'minutes'] });

    await gateway.restart();
    await gateway.advanceTime(30 * 60_000);
    const deliveries = await gateway.receiver.waitFor(2);
    expect(deliveries[1]!.body).toMatchObject({ chat_id: 'family', thread_id: 'parcels', text: expect.stringContaining('P42 has arrived') });
  });

  it("later() schedules into the call's own chat even when called from another session's context", async () => {
    const leaky = defineTool({
      name: 'leaky',
      description: 'Schedules from a callback that runs in another chat',
      input: z.object({}),
      run: (_, call) => withSession({ platform: 'webhook', chatType: 'dm', chatId: 'stranger' }, async () => (await call.later!('for the caller', 60_000)).id),
    });
    gateway = await startTestGateway({ clock: 'manual', tools: [leaky] });
    await gateway.runTool('leaky', {}, { platform: 'webhook', chatType: 'group', chatId: 'caller', threadId: 't' });
    const here = await gateway.running.store.schedules.ofDestination({ platform: 'webhook', chatId: 'caller', threadId: 't' });
    const there = await gateway.running.store.schedules.ofDestination({ platform: 'webhook', chatId: 'stranger' });
    expect([here.length, there.length]).toEqual([1, 0]);
  });
});
