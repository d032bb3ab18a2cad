import { afterEach } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import type { RoutingSnapshot } from '../../src/session/index.js';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../../src/testing/index.js';

/** A gateway starter for one test file; every gateway it started is stopped after its test. */
export function useTestGateways(): (options?: TestGatewayOptions) => Promise<TestGateway> {
  const running: TestGateway[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((gateway) => gateway.stop()));
  });
  return async (options = {}) => {
    const gateway = await startTestGateway(options);
    running.push(gateway);
    return gateway;
  };
}

/** The same, taking configuration variables and an agent. */
export function useGatewayWith(): (env?: Record<string, string>, agent?: Agent) => Promise<TestGateway> {
  const start = useTestGateways();
  return (env = {}, agent) => start({ env, ...(agent === undefined ? {} : { agent }) });
}

/** Polls `check` until it holds; fails after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The routing snapshot of a webhook DM, as work begun in that chat would carry it. */
export function webhookOrigin(chatId: string, sessionId: unknown): RoutingSnapshot {
  return { v: 1, session: { platform: 'webhook', chatType: 'dm', chatId, sessionId: String(sessionId) } };
}
