import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { AcceptedMessage, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import { TelegramPlatform } from '../../../src/platforms/telegram/telegram-platform.js';
import { RedisKeys } from '../../../src/store/redis/redis-keys.js';
import { FakeTelegram } from '../../../src/testing/fake-telegram.js';
import { startLocalServer } from '../../../src/testing/local-server.js';
import { until } from '../../helpers/gateway.js';
import { countedLeases, type LeaseTries } from '../../helpers/counted-leases.js';
import { useRedis } from '../../helpers/redis.js';

const LEASE_MS = 300;
const logger = pino({ level: 'silent' });

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A Bot API call as the fake saw it, and which instance made it. */
interface LoggedCall {
  readonly instance: string;
  readonly method: string;
}

/** The fake Bot API behind one loopback proxy per instance, so its log says who called. */
async function fakeTelegram(): Promise<{
  readonly fake: FakeTelegram;
  readonly calls: LoggedCall[];
  /** The next `count` getUpdates calls are refused with 409 Conflict, as Telegram refuses a second poller. */
  conflictNext(count: number): void;
  apiRootOf(instance: string): Promise<string>;
}> {
  const fake = await FakeTelegram.start();
  closing.push(() => fake.close());
  const calls: LoggedCall[] = [];
  let conflicts = 0;
  return {
    fake,
    calls,
    conflictNext: (count) => void (conflicts = count),
    apiRootOf: async (instance) => {
      const proxy = await startLocalServer(async (request) => {
        const method = request.path.split('/').pop()!;
        calls.push({ instance, method });
        if (method === 'getUpdates' && conflicts > 0) {
          conflicts--;
          return { status: 409, body: { ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request' } };
        }
        const answer = await fetch(`${fake.apiRoot}${request.path}`, {
          method: request.method,
          headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
          ...(request.raw.length === 0 ? {} : { body: request.raw }),
        });
        return { status: answer.status, body: (await answer.json()) as object };
      });
      closing.push(() => proxy.close());
      return proxy.origin;
    },
  };
}

/** An intake that takes every message. */
function takingIntake(): Intake & { readonly taken: InboundMessage[] } {
  const taken: InboundMessage[] = [];
  return {
    taken,
    accept: async (message): Promise<AcceptedMessage> => {
      taken.push(message);
      return { messageId: `m${taken.length}`, sessionId: 's', traceId: '0'.repeat(32) };
    },
  };
}

/** One gateway instance's Telegram platform polling under a lease, with its lease's failed tries counted. */
interface Instance {
  readonly name: string;
  readonly platform: TelegramPlatform;
  readonly connection: Redis;
  readonly intake: ReturnType<typeof takingIntake>;
  readonly tries: LeaseTries;
}

async function startInstance(name: string, redisUrl: string, prefix: string, apiRoot: string): Promise<Instance> {
  const { connection, leases, tries } = countedLeases({
    redisUrl,
    prefix,
    instanceId: name,
    leaseMs: LEASE_MS,
    closing,
  });
  const platform = new TelegramPlatform({ token: '1:test', mode: 'polling', apiRoot, logger, pollingLease: leases });
  const intake = takingIntake();
  const instance: Instance = { name, platform, connection, intake, tries };
  platform.start(intake);
  closing.push(() => platform.close());
  return instance;
}

const update = (id: number, text: string) =>
  ({ update_id: id, message: { message_id: id, date: 0, chat: { id: 5, type: 'private', first_name: 'Bo' }, text } }) as never;

const pollsOf = (calls: readonly LoggedCall[], instance: string): number =>
  calls.filter((call) => call.instance === instance && call.method === 'getUpdates').length;

describe('telegram long polling on several instances', () => {
  const redis = useRedis();

  async function twoInstances(conflicts = 0): Promise<{ calls: LoggedCall[]; fake: FakeTelegram; holder: Instance; waiter: Instance; prefix: string }> {
    const prefix = redis.prefix();
    const telegram = await fakeTelegram();
    telegram.conflictNext(conflicts);
    const a = await startInstance('a', redis.url, prefix, await telegram.apiRootOf('a'));
    const b = await startInstance('b', redis.url, prefix, await telegram.apiRootOf('b'));
    await until(() => pollsOf(telegram.calls, 'a') + pollsOf(telegram.calls, 'b') > 0, 5_000);
    const [holder, waiter] = pollsOf(telegram.calls, 'a') > 0 ? [a, b] : [b, a];
    // Three tries of the waiter span a lease: it had every chance to poll too.
    await until(() => waiter.tries.failed >= 3, 5_000);
    return { calls: telegram.calls, fake: telegram.fake, holder, waiter, prefix };
  }

  it('polls on one instance only; the other takes no update', async () => {
    const { calls, fake, holder, waiter } = await twoInstances();
    fake.queueUpdate(update(1, 'hello'));
    await until(() => holder.intake.taken.length === 1, 5_000);
    expect(pollsOf(calls, waiter.name)).toBe(0);
    expect(pollsOf(calls, holder.name)).toBeGreaterThan(0);
    expect(waiter.intake.taken).toEqual([]);
  });

  it('hands polling over as soon as the holder stops, without the two ever polling together', async () => {
    const { calls, fake, holder, waiter, prefix } = await twoInstances();
    await holder.platform.close();
    const holderPolls = pollsOf(calls, holder.name);
    // Released, not left to run out its lease: free, or the waiter's already.
    const holding = await waiter.connection.get(new RedisKeys(prefix).key('lease', 'telegram-polling'));
    expect(holding === null || holding.startsWith(`${waiter.name}/`)).toBe(true);
    await until(() => pollsOf(calls, waiter.name) > 0, 5_000);
    fake.queueUpdate(update(2, 'after the handover'));
    await until(() => waiter.intake.taken.length === 1, 5_000);
    // The stopped holder made no call after its stop: every one of its polls came before the waiter's first.
    expect(pollsOf(calls, holder.name)).toBe(holderPolls);
    const firstOfWaiter = calls.findIndex((call) => call.instance === waiter.name && call.method === 'getUpdates');
    expect(calls.slice(firstOfWaiter).some((call) => call.instance === holder.name)).toBe(false);
    expect(waiter.intake.taken.map((message) => message.text)).toEqual(['after the handover']);
  });

  it('moves polling to another instance when the holder loses Redis (as on kill -9), the holder stopping first', async () => {
    const { calls, fake, holder, waiter } = await twoInstances();
    holder.connection.disconnect();
    await until(() => pollsOf(calls, waiter.name) > 0, 5_000);
    const firstOfWaiter = calls.findIndex((call) => call.instance === waiter.name && call.method === 'getUpdates');
    fake.queueUpdate(update(3, 'taken over'));
    await until(() => waiter.intake.taken.length === 1, 5_000);
    expect(calls.slice(firstOfWaiter).some((call) => call.instance === holder.name)).toBe(false);
    expect(holder.intake.taken).toEqual([]);
  });

  it('polls again after a 409 Conflict while it holds the lease, instead of leaving nobody polling', async () => {
    const { calls, fake, holder, waiter } = await twoInstances(1);
    // grammY ends its loop on a 409; the holder starts a new one (getMe again) and polls on.
    await until(() => calls.filter((call) => call.instance === holder.name && call.method === 'getMe').length === 2, 10_000);
    fake.queueUpdate(update(4, 'after the conflict'));
    await until(() => holder.intake.taken.length === 1, 5_000);
    expect(pollsOf(calls, waiter.name)).toBe(0);
  });
});
