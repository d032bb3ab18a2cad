import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { STORE_FILE } from '../../src/store/store-file.js';
import { until, useTestGateways } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const start = useTestGateways();
const redis = useRedis();
// The built bin, as a user's command runs it (dist/ is built before the run).
const CLI = fileURLToPath(new URL('../../dist/cli/threadline.js', import.meta.url));

async function run(argv: string[], env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

describe('threadline send with the gateway on Redis', () => {
  it('from /run: recorded in the Redis outbox the gateway sends from, not in a file of the data dir', async () => {
    const g = await start({
      webhookToken: true,
      env: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix(), THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*' },
    });
    // A store file left in the data dir from days on SQLite: what the send went into, unread, before.
    await (await SqliteStore.open(join(g.dataDir, STORE_FILE))).close();
    await g.send({ chat_id: 'ops', thread_id: 'deploys', chat_type: 'group', text: `/run node ${CLI} send --data-dir ${g.dataDir} origin shipped from redis` });
    await until(() => g.receiver.received.some((delivery) => delivery.body.kind === 'notification'), 30_000);
    const done = g.receiver.received.find((delivery) => delivery.body.kind === 'notification')!;
    expect(done.body.text).toContain('finished: exit 0');
    expect(done.body.text).toContain('queued in the Redis outbox');
    await until(() => g.receiver.received.some((delivery) => delivery.body.kind === 'send'));
    expect(g.receiver.received.find((delivery) => delivery.body.kind === 'send')!.body).toMatchObject({ chat_id: 'ops', thread_id: 'deploys', text: 'shipped from redis' });
  }, 60_000);

  it('run on the host without the Redis settings: refuses the store file a gateway on Redis left in its data dir', async () => {
    const g = await start({ env: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix() } });
    await (await SqliteStore.open(join(g.dataDir, STORE_FILE))).close();
    const env = { THREADLINE_DATA_DIR: g.dataDir, THREADLINE_SEND_PLATFORMS: 'webhook' };
    const refused = await run(['send', 'webhook:ops', 'into', 'the', 'void?'], env);
    expect(refused.code).toBe(1);
    expect(refused.out).toBe('');
    expect(refused.err).toContain('keeps its outbox on Redis');
    // Even told `sqlite`: the gateway running there would never read it.
    expect((await run(['send', 'webhook:ops', 'still?'], { ...env, THREADLINE_SEND_STORE: 'sqlite' })).code).toBe(1);
    const store = await SqliteStore.open(join(g.dataDir, STORE_FILE));
    try {
      expect(await store.outbox.list({ limit: 10 })).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('told the gateway keeps its outbox on Redis but given no URL: fails, exit 1, and queues nothing anywhere', async () => {
    const g = await start();
    const sent = await run(['send', 'webhook:ops', 'lost?'], { THREADLINE_SEND_STORE: 'redis', THREADLINE_DATA_DIR: g.dataDir, THREADLINE_SEND_PLATFORMS: 'webhook' });
    expect(sent.code).toBe(1);
    expect(sent.out).toBe('');
    expect(sent.err).toContain('THREADLINE_REDIS_URL');
    expect(sent.err).toContain('[TL_CONFIG_INVALID]');
    expect(await g.deliveries()).toEqual([]);
  });
});
