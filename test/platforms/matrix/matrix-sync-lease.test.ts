import { afterEach, describe, expect, it } from 'vitest';
import type { MatrixPlatform } from '../../../src/platforms/matrix/matrix-platform.js';
import { redisSyncTokens } from '../../../src/store/redis/redis-sync-tokens.js';
import { FakeMatrix } from '../../../src/testing/fake-matrix.js';
import { startLocalServer } from '../../../src/testing/local-server.js';
import { until } from '../../helpers/gateway.js';
import { countedLeases, type LeaseTries } from '../../helpers/counted-leases.js';
import { useRedis } from '../../helpers/redis.js';
import { matrixPlatform, takingIntake } from './matrix-platform.fixture.js';

const LEASE_MS = 300;

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A /sync call as the fake saw it, and which instance made it. */
interface LoggedSync {
  readonly instance: string;
  readonly at: number;
}

interface Instance {
  readonly name: string;
  readonly platform: MatrixPlatform;
  readonly intake: ReturnType<typeof takingIntake>;
  /** Its lease's tries so far: those that found it held by the other, and whether it holds it. */
  readonly tries: LeaseTries;
}

describe('matrix /sync on several instances', () => {
  const redis = useRedis();

  /** The fake behind one loopback proxy per instance, so the log says who synced. */
  async function proxyFor(fake: FakeMatrix, instance: string, syncs: LoggedSync[]): Promise<string> {
    const proxy = await startLocalServer(async (request) => {
      if (request.path.endsWith('/sync')) syncs.push({ instance, at: Date.now() });
      const query = request.query.toString();
      const answer = await fetch(`${fake.homeserverUrl}${request.path}${query === '' ? '' : `?${query}`}`, {
        method: request.method,
        headers: { authorization: request.headers.authorization ?? '', 'content-type': request.headers['content-type'] ?? 'application/json' },
        ...(request.raw.length === 0 ? {} : { body: request.raw }),
      });
      return { status: answer.status, body: (await answer.json()) as object };
    });
    closing.push(() => proxy.close());
    return proxy.origin;
  }

  async function startInstance(name: string, fake: FakeMatrix, prefix: string, syncs: LoggedSync[]): Promise<Instance> {
    const { connection, keys, leases, tries } = countedLeases({
      redisUrl: redis.url,
      prefix,
      instanceId: name,
      leaseMs: LEASE_MS,
      closing,
    });
    const platform = matrixPlatform({ fake, tokens: redisSyncTokens(connection, keys), homeserverUrl: await proxyFor(fake, name, syncs), syncLease: leases });
    const instance: Instance = { name, platform, intake: takingIntake(), tries };
    platform.start(instance.intake);
    closing.push(() => platform.close());
    return instance;
  }

  it('syncs on the lease holder only; handed over at its stop, the other reads on from the stored token: nothing lost, nothing twice', async () => {
    const fake = await FakeMatrix.start();
    closing.push(() => fake.close());
    const syncs: LoggedSync[] = [];
    const prefix = redis.prefix();
    const a = await startInstance('a', fake, prefix, syncs);
    const b = await startInstance('b', fake, prefix, syncs);
    await fake.waitForSinceSyncs(1);
    const holder = syncs[0]!.instance === 'a' ? a : b;
    const waiter = holder === a ? b : a;
    fake.postMessage('!room:fake.local', 'one', { threadRoot: '$t' });
    await until(() => holder.intake.taken.length === 1);
    // Three tries of the waiter span a lease: it had every chance to sync too.
    await until(() => waiter.tries.failed >= 3, 5_000);
    expect(syncs.filter((sync) => sync.instance === waiter.name)).toEqual([]);
    await holder.platform.close();
    const stoppedAt = Date.now();
    fake.postMessage('!room:fake.local', 'two', { threadRoot: '$t' });
    await until(() => waiter.intake.taken.length === 1, 5_000);
    expect(waiter.intake.taken.map((message) => message.text)).toEqual(['two']);
    expect(holder.intake.taken.map((message) => message.text)).toEqual(['one']);
    expect(syncs.filter((sync) => sync.instance === holder.name && sync.at > stoppedAt)).toEqual([]);
  });
});
