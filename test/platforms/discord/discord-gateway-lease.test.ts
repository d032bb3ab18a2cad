import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { AcceptedMessage, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import { DiscordPlatform } from '../../../src/platforms/discord/discord-platform.js';
import { redisSyncTokens } from '../../../src/store/redis/redis-sync-tokens.js';
import { FakeDiscord } from '../../../src/testing/index.js';
import { until } from '../../helpers/gateway.js';
import { countedLeases, type LeaseTries } from '../../helpers/counted-leases.js';
import { useRedis } from '../../helpers/redis.js';

const LEASE_MS = 300;
const TOKEN = 'discord-lease-token';
const logger = pino({ level: 'silent' });

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** One gateway instance's Discord platform under the Gateway lease, with its lease's failed tries counted. */
interface Instance {
  readonly name: string;
  readonly platform: DiscordPlatform;
  readonly connection: Redis;
  readonly taken: InboundMessage[];
  readonly tries: LeaseTries;
}

async function startInstance(name: string, redisUrl: string, prefix: string, fake: FakeDiscord): Promise<Instance> {
  const { connection, keys, leases, tries } = countedLeases({
    redisUrl,
    prefix,
    instanceId: name,
    leaseMs: LEASE_MS,
    closing,
  });
  const syncTokens = redisSyncTokens(connection, keys);
  const platform = new DiscordPlatform({ botToken: TOKEN, apiRoot: fake.apiRoot, logger, gatewayLease: leases, syncTokens });
  const taken: InboundMessage[] = [];
  const intake: Intake = {
    accept: async (message): Promise<AcceptedMessage> => {
      taken.push(message);
      return { messageId: `m${taken.length}`, sessionId: 's', traceId: '0'.repeat(32) };
    },
  };
  const instance: Instance = { name, platform, connection, taken, tries };
  platform.start(intake);
  closing.push(() => platform.close());
  return instance;
}

describe('the Discord Gateway on several instances', () => {
  const redis = useRedis();

  async function twoInstances(): Promise<{ fake: FakeDiscord; holder: Instance; waiter: Instance }> {
    const prefix = redis.prefix();
    const fake = await FakeDiscord.start({ token: TOKEN });
    closing.push(() => fake.close());
    const a = await startInstance('a', redis.url, prefix, fake);
    const b = await startInstance('b', redis.url, prefix, fake);
    await fake.connected(0, 5_000);
    const [holder, waiter] = a.tries.holds ? [a, b] : [b, a];
    // Three tries of the waiter span a lease: it had every chance to connect too.
    await until(() => waiter.tries.failed >= 3, 5_000);
    return { fake, holder, waiter };
  }

  it('connects one Gateway session only; the other instance takes no message', async () => {
    const { fake, holder, waiter } = await twoInstances();
    fake.userMessage({ channelId: '1700000000000000001', content: 'hello' });
    await until(() => holder.taken.length === 1, 5_000);
    expect(fake.gatewayStats.identifies).toHaveLength(1);
    expect(fake.gatewayStats.mostConnected).toBe(1);
    expect(waiter.taken).toEqual([]);
  });

  it('hands the connection over as soon as the holder stops, never two at once, resuming its session: nothing written in between is lost', async () => {
    const { fake, holder, waiter } = await twoInstances();
    fake.userMessage({ channelId: '1700000000000000001', content: 'before' });
    await until(() => holder.taken.length === 1, 5_000);
    await holder.platform.close();
    // Nobody is connected now: Discord keeps this for the session the holder left.
    fake.userMessage({ channelId: '1700000000000000001', content: 'in between' });
    await fake.connected(1, 5_000);
    fake.userMessage({ channelId: '1700000000000000001', content: 'after the handover' });
    await until(() => waiter.taken.length === 2, 5_000);
    expect(waiter.taken.map((message) => message.text)).toEqual(['in between', 'after the handover']);
    expect(holder.taken.map((message) => message.text)).toEqual(['before']);
    expect(fake.gatewayStats.mostConnected).toBe(1);
    expect(fake.gatewayStats.identifies).toHaveLength(1);
    expect(fake.gatewayStats.resumes).toHaveLength(1);
  });

  it('moves the connection to another instance when the holder loses Redis (as on kill -9), the holder disconnecting first', async () => {
    const { fake, holder, waiter } = await twoInstances();
    holder.connection.disconnect();
    await fake.connected(1, 5_000);
    fake.userMessage({ channelId: '1700000000000000001', content: 'taken over' });
    await until(() => waiter.taken.length === 1, 5_000);
    expect(holder.taken).toEqual([]);
    expect(fake.gatewayStats.mostConnected).toBe(1);
  });
});
