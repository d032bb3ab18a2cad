import { propagation } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { slackSignature } from '../../src/platforms/slack/slack-signature.js';
import { isSessionNamespaceKey } from '../../src/session/index.js';
import { TEST_SECRETS, type TestGateway, type TestGatewayOptions } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const startTestGateway = useTestGateways();

/** Inbound baggage: one key the setting allows, one it does not, and one of threadline's own. */
const BAGGAGE = 'tenant=acme,other=x,chat.id=spoofed';

/** An echo agent that records the foreign (not threadline's) baggage each turn runs with, by text. */
function recordingAgent(): Agent & { readonly seen: Map<string, Record<string, string>> } {
  const seen = new Map<string, Record<string, string>>();
  const echo = new CommandAgent(new Map());
  return {
    seen,
    handle: async (turn) => {
      const entries = propagation.getActiveBaggage()?.getAllEntries() ?? [];
      seen.set(turn.text, Object.fromEntries(entries.filter(([key]) => !isSessionNamespaceKey(key)).map(([key, entry]) => [key, entry.value])));
      return echo.handle(turn);
    },
  };
}

async function post(g: TestGateway, path: string, body: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${g.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', baggage: BAGGAGE, ...headers }, body });
  return response.status;
}

/** Sends `text` through one platform's inbound route with the BAGGAGE header. */
interface Harness {
  readonly name: string;
  readonly options: TestGatewayOptions;
  send(g: TestGateway, text: string): Promise<number>;
}

const webhook: Harness = {
  name: 'webhook',
  options: {},
  send: (g, text) => post(g, '/v1/messages', JSON.stringify({ chat_id: 'c1', text }), {}),
};

const telegram: Harness = {
  name: 'telegram webhook',
  options: { telegram: true },
  send: (g, text) =>
    post(
      g,
      '/v1/telegram/webhook',
      JSON.stringify({ update_id: 1, message: { message_id: 1, date: 0, chat: { id: 7, type: 'private' }, from: { id: 7, is_bot: false, first_name: 'A' }, text } }),
      { 'x-telegram-bot-api-secret-token': TEST_SECRETS.telegramWebhookSecret },
    ),
};

const slack: Harness = {
  name: 'slack',
  options: { slack: true },
  send: (g, text) => {
    const raw = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text, ts: '1800000000.000001' } });
    const timestamp = String(Math.floor(Date.now() / 1000));
    return post(g, '/v1/slack/events', raw, {
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': slackSignature(TEST_SECRETS.slackSigningSecret, timestamp, raw),
    });
  },
};

describe.each([webhook, telegram, slack])('THREADLINE_INBOUND_BAGGAGE on $name', (harness) => {
  it('keeps the allowed inbound key in the turn, and drops the others', async () => {
    const agent = recordingAgent();
    const g = await startTestGateway({ ...harness.options, agent, env: { THREADLINE_INBOUND_BAGGAGE: 'tenant' } });
    expect(await harness.send(g, 'hello')).toBeLessThan(300);
    await until(() => agent.seen.has('hello'));
    expect(agent.seen.get('hello')).toEqual({ tenant: 'acme' });
  });

  it('keeps none by default', async () => {
    const agent = recordingAgent();
    const g = await startTestGateway({ ...harness.options, agent });
    expect(await harness.send(g, 'hello')).toBeLessThan(300);
    await until(() => agent.seen.has('hello'));
    expect(agent.seen.get('hello')).toEqual({});
  });
});

describe('THREADLINE_INBOUND_BAGGAGE', () => {
  it.each([
    [undefined, false],
    ['none', false],
    [' all ', true],
    ['tenant, region ,', ['tenant', 'region']],
  ] as const)('%j keeps %j', (value, expected) => {
    expect(readGatewayConfig(value === undefined ? {} : { THREADLINE_INBOUND_BAGGAGE: value }).inboundBaggage).toEqual(expected);
  });
});
