import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { LOST_AFTER_MS, readOperatorView } from '../../src/operator/operator-view.js';
import { captureRouting, type RoutingSnapshot } from '../../src/session/index.js';
import type { TestGateway } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

/** While handling chat B's `b`, delivers work that began in chat A: the mix-up the misroute guard refuses. */
function mixingAgent(): Agent & { gateway?: TestGateway } {
  let first: RoutingSnapshot | undefined;
  const agent: Agent & { gateway?: TestGateway } = {
    handle: async (turn) => {
      if (turn.text !== 'b') {
        first ??= captureRouting();
        return turn.reply(`answer: ${turn.text}`);
      }
      await agent.gateway!.running.gateway.router.deliver({ id: `mixed-${turn.messageId}`, kind: 'notification', text: 'for A', origin: first! });
    },
  };
  return agent;
}

describe('the operator page’s view', () => {
  it('lists a delivery the misroute guard refused as a misrouted dead letter, linked to the trace its work began in', async () => {
    const agent = mixingAgent();
    const g = await start({ agent, env: { THREADLINE_TRACE_UI_URL: 'https://jaeger.example/trace/{traceId}' } });
    agent.gateway = g;
    const first = await g.send({ chat_id: 'A', text: 'a' });
    await g.receiver.waitFor(1);
    await g.send({ chat_id: 'B', text: 'b' });
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
    // An ordinary dead letter besides it is no misroute.
    g.receiver.failNext(1, 400);
    await g.send({ chat_id: 'C', text: 'c' });
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 2);

    const view = await readOperatorView(g.running.gateway, g.running.store, Date.now());
    expect(view.deadLetters).toHaveLength(2);
    expect(view.misroutes.map((record) => [record.id.startsWith('mixed-'), record.destination.chatId])).toEqual([[true, 'B']]);
    const page = await (await fetch(`${g.url}/v1/admin`)).text();
    const misroutes = page.slice(page.indexOf('<section id="misroutes"'), page.indexOf('<section id="lost"'));
    expect(misroutes).toContain('data-rows="1"');
    expect(misroutes).toContain('webhook:A');
    expect(misroutes).toContain(`href="https://jaeger.example/trace/${first.body['trace_id'] as string}"`);
  });

  it('counts as lost what the store holds undelivered longer than threadline misroutes allows, and nothing sooner', async () => {
    const g = await start();
    g.receiver.failNext(1, 400);
    await g.send({ chat_id: 'late', text: 'x' });
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
    const now = Date.now();
    expect((await readOperatorView(g.running.gateway, g.running.store, now)).lost).toEqual([]);
    const later = await readOperatorView(g.running.gateway, g.running.store, now + LOST_AFTER_MS + 1_000);
    expect(later.lost).toMatchObject([{ what: 'delivery', state: 'failed', destination: { chatId: 'late' }, source: 'store' }]);
  });
});
