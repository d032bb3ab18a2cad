import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../../src/store/store.js';
import { useRedis } from '../../helpers/redis.js';
import { chat } from '../store.fixture.js';
import { useRedisStores } from './redis-store.fixture.js';

const redis = useRedis();
const openStore = useRedisStores(redis);
const ROOM = chat('c:1');

function entry(text: string, at = 1, role: HistoryEntry['role'] = 'user'): HistoryEntry {
  return { role, text, at };
}
const texts = (entries: readonly HistoryEntry[]) => entries.map((stored) => stored.text);

describe('RedisStore history keys', () => {
  it('forgets a session idle for the retention: every write sets its list to expire', async () => {
    const { store, keys, redis: connection } = openStore();
    await store.history.append('s1', ROOM, [entry('one')], 10);
    await store.history.mirror(ROOM, entry('mirrored'), 10);
    const month = 30 * 24 * 3600_000;
    for (const key of [keys.key('history', 'session', 's1'), keys.key('history', 'mirror', 'webhook:c%3A1')]) {
      const ttl = await connection.pttl(key);
      expect(ttl).toBeGreaterThan(month - 60_000);
      expect(ttl).toBeLessThanOrEqual(month);
    }
  });

  it('leaves out an entry that does not parse', async () => {
    const { store, keys, redis: connection } = openStore();
    await store.history.append('s1', ROOM, [entry('one')], 10);
    await connection.rpush(keys.key('history', 'session', 's1'), 'garbage', '99:{not json', `100:${JSON.stringify({ role: 'nobody', text: 'x', at: 1 })}`);
    expect(texts(await store.history.recent('s1', ROOM, 10))).toEqual(['one']);
  });
});
