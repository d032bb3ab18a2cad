import { describe, expect, it } from 'vitest';
import type { DeliveryState } from '../../../src/store/store.js';
import { useRedis } from '../../helpers/redis.js';
import { processRecord, routingOf } from '../store.fixture.js';
import { useRedisStores } from './redis-store.fixture.js';

const redis = useRedis();
const openStore = useRedisStores(redis);
const ROOMY = { maxPerDestination: 100, maxTotal: 100 };

describe('RedisStore processes and the outbox', () => {
  it('reads only the notices\' statuses without noticeStates: a done one is left out, none is made up', async () => {
    const { store, outbox } = openStore();
    for (const [id, endedAt] of [['p-a', 10], ['p-done', 15]] as const) {
      await store.processes.add(processRecord(id, 'a'), ROOMY);
      await store.processes.ended(id, { endedAt, code: 0 });
    }
    outbox.statuses.set('proc:p-done:done', 'done');
    outbox.statuses.set('proc:p-a:done', 'failed');
    expect(await store.processes.unreported({ before: 100, limit: 10 })).toEqual([{ record: { ...processRecord('p-a', 'a'), exit: { endedAt: 10, code: 0 } } }]);
  });

  it('reports the notice with its process as noticeStates tells it', async () => {
    const notice: DeliveryState = {
      id: 'proc:p1:done',
      kind: 'send',
      status: 'pending',
      destination: 'webhook:c%3A1',
      origin: routingOf('c:1'),
      attempts: 2,
      attemptsSince: 9,
      dueAt: 12,
    };
    const { store } = openStore({ noticeStates: async (asked) => new Map(asked.includes(notice.id) ? [[notice.id, notice]] : []) });
    await store.processes.add(processRecord('p1'), ROOMY);
    await store.processes.ended('p1', { endedAt: 9, code: 1 });
    expect(await store.processes.unreported({ before: 100, limit: 10 })).toEqual([
      { record: { ...processRecord('p1'), exit: { endedAt: 9, code: 1 } }, notice },
    ]);
  });
});
