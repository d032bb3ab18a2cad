import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startRedisServer, useRedis } from '../helpers/redis.js';

describe('test Redis', () => {
  const redis = useRedis();
  it('answers on loopback with a fresh prefix per call', async () => {
    const client = new Redis(redis.url);
    expect(await client.ping()).toBe('PONG');
    expect(redis.prefix()).not.toBe(redis.prefix());
    client.disconnect();
  });
  it('a server of its own stops and comes back', async () => {
    const server = await startRedisServer({ appendonly: true });
    const client = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    await client.set('k', 'v');
    await server.stop();
    await expect(client.get('k')).rejects.toThrow();
    await server.restart();
    await expect(client.get('k')).resolves.toBe('v');
    client.disconnect();
  });
});
