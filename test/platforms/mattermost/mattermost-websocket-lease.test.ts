import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MattermostPlatform } from '../../../src/platforms/mattermost/mattermost-platform.js';
import type { AcceptedMessage, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import { FakeMattermost } from '../../../src/testing/index.js';
import { until } from '../../helpers/gateway.js';
import { countedLeases, type LeaseTries } from '../../helpers/counted-leases.js';
import { useRedis } from '../../helpers/redis.js';

const LEASE_MS = 300;
const logger = pino({ level: 'silent' });

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** An intake that takes every message once, remembering keys as the store does across instances. */
function sharedIntake(keys: Set<string>): Intake & { readonly taken: InboundMessage[] } {
  const taken: InboundMessage[] = [];
  return {
    taken,
    accept: async (message, _inbound, idempotency): Promise<AcceptedMessage> => {
      const duplicate = keys.has(idempotency!.key);
      keys.add(idempotency!.key);
      if (!duplicate) taken.push(message);
      return { messageId: `m${taken.length}`, sessionId: 's', traceId: '0'.repeat(32), ...(duplicate ? { duplicate: true } : {}) };
    },
  };
}

interface Instance {
  readonly platform: MattermostPlatform;
  readonly connection: Redis;
  readonly intake: ReturnType<typeof sharedIntake>;
  /** Its lease's tries so far: those that found it another's, and whether it holds it. */
  readonly tries: LeaseTries;
}

function startInstance(name: string, fake: FakeMattermost, redisUrl: string, prefix: string, keys: Set<string>): Instance {
  const { connection, leases, tries } = countedLeases({
    redisUrl,
    prefix,
    instanceId: name,
    leaseMs: LEASE_MS,
    closing,
  });
  const platform = new MattermostPlatform({ url: fake.url, token: fake.token, threadTopLevel: false, catchUpMs: 60_000, logger, lease: leases });
  const intake = sharedIntake(keys);
  const instance: Instance = { platform, connection, intake, tries };
  platform.start(intake);
  closing.push(() => platform.close());
  return instance;
}

describe('the mattermost websocket on several instances', () => {
  const redis = useRedis();

  async function twoInstances() {
    const fake = await FakeMattermost.start();
    closing.push(() => fake.close());
    const prefix = redis.prefix();
    const keys = new Set<string>();
    const a = startInstance('a', fake, redis.url, prefix, keys);
    const b = startInstance('b', fake, redis.url, prefix, keys);
    await fake.waitForConnections(1);
    const channelId = fake.addChannel();
    // Which one holds it shows in who takes a post.
    fake.userPost({ channelId, message: 'who listens' });
    await until(() => a.intake.taken.length + b.intake.taken.length === 1, 5_000);
    const [holder, waiter] = a.intake.taken.length === 1 ? [a, b] : [b, a];
    return { fake, channelId, holder, waiter };
  }

  it('keeps one websocket for all instances: each post is taken once, by the holder', async () => {
    const { fake, channelId, holder, waiter } = await twoInstances();
    // Three tries of the waiter span a lease: it had every chance to connect too.
    const triesBefore = waiter.tries.failed;
    await until(() => waiter.tries.failed >= triesBefore + 3, 5_000);
    for (const text of ['one', 'two', 'three']) fake.userPost({ channelId, message: text });
    await until(() => holder.intake.taken.length === 4, 5_000);
    expect(fake.connections).toBe(1);
    expect(fake.openConnections).toBe(1);
    expect(waiter.intake.taken).toEqual([]);
  });

  it('shows typing over the websocket where it is held, and over REST on the other instances', async () => {
    const { fake, channelId, holder, waiter } = await twoInstances();
    const root = fake.addThread(channelId);
    const target = { destination: { platform: 'mattermost', chatId: channelId, threadId: root }, chatType: 'channel' as const };
    await holder.platform.typing(target, new AbortController().signal);
    await waiter.platform.typing(target, new AbortController().signal);
    await until(() => fake.typing.length === 2, 5_000);
    expect(fake.typing.map((typing) => typing.via).sort()).toEqual(['rest', 'websocket']);
    expect(fake.typing.every((typing) => typing.channelId === channelId && typing.parentId === root)).toBe(true);
  });

  it('hands the websocket over when the holder stops, and the new holder catches up on what was posted in between', async () => {
    const { fake, channelId, holder, waiter } = await twoInstances();
    // The server refuses connections until the holder has stopped: nobody listens in between.
    fake.cut({ down: true });
    await holder.platform.close();
    for (const text of ['in between 1', 'in between 2']) fake.userPost({ channelId, message: text });
    fake.resume();
    await fake.waitForConnections(2);
    fake.userPost({ channelId, message: 'after' });
    await until(() => waiter.intake.taken.length === 3, 5_000);
    expect(waiter.intake.taken.map((message) => message.text)).toEqual(['in between 1', 'in between 2', 'after']);
    // The first post, taken by the old holder and inside the catch-up's reach, was not taken again.
    expect(holder.intake.taken.map((message) => message.text)).toEqual(['who listens']);
  });

  it('moves the websocket when the holder loses Redis (as on kill -9), the holder letting go first', async () => {
    const { fake, channelId, holder, waiter } = await twoInstances();
    holder.connection.disconnect();
    await fake.waitForConnections(2);
    await until(() => fake.openConnections === 1, 5_000);
    fake.userPost({ channelId, message: 'taken over' });
    await until(() => waiter.intake.taken.length === 1, 5_000);
    expect(holder.intake.taken.map((message) => message.text)).toEqual(['who listens']);
  });
});
