import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { until, useTestGateways } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const start = useTestGateways();
const redis = useRedis();

describe('threadline.delivery.latency with the outbox in Redis', () => {
  it("records a reply's latency from its message's acceptance, as the SQLite outbox does", async () => {
    const slow: Agent = {
      handle: async (turn) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await turn.reply('after a while');
      },
    };
    const g = await start({ agent: slow, env: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix() } });
    const reply = { 'messaging.system': 'webhook', 'threadline.delivery.kind': 'reply' };
    const latency = async () => {
      const points = (await g.metrics()).points.filter(
        (point) => point.name === 'threadline.delivery.latency' && Object.entries(reply).every(([key, value]) => point.attributes[key] === value),
      );
      return { count: points.reduce((n, point) => n + point.value, 0), sum: points.reduce((n, point) => n + (point.sum ?? 0), 0) };
    };
    const before = await latency();
    const sentAt = Date.now();
    await g.send({ chat_id: 'a', text: 'x' });
    await until(async () => (await latency()).count === before.count + 1, 20_000);
    const seconds = (await latency()).sum - before.sum;
    expect(seconds).toBeGreaterThanOrEqual(0.3);
    expect(seconds).toBeLessThanOrEqual((Date.now() - sentAt) / 1000 + 0.01);
  }, 30_000);
});
