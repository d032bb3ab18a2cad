import { afterEach, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { FakePlatform, delivery, instance, refused, type Instance } from '../queue/redis-outbox-support.js';

const redis = useRedis();
const opened: Instance[] = [];

afterEach(async () => {
  for (const each of opened.splice(0).reverse()) await each.close();
});

async function run(argv: string[], env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

/** A shared outbox holding one dead letter (`dead:1`, refused) and one done delivery, and the env that names it. */
async function seed(): Promise<{ env: NodeJS.ProcessEnv; outbox: Instance; platform: FakePlatform }> {
  const prefix = redis.prefix();
  const platform = new FakePlatform();
  let refusing = true;
  platform.answer = (message) => (message.id === 'dead:1' && refusing ? refused() : undefined);
  const outbox = instance({ url: redis.url, prefix, platform });
  opened.push(outbox);
  await outbox.records.add(delivery('dead:1', 'a:b'));
  await outbox.records.add(delivery('done-1', 'c'));
  await outbox.outbox.start();
  await until(async () => (await outbox.records.list({ limit: 5, failedOnly: true })).length === 1 && platform.sentTo('c').length === 1);
  refusing = false;
  return { env: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: prefix }, outbox, platform };
}

describe('threadline deliveries on Redis (THREADLINE_REDIS_URL)', () => {
  it('lists the shared outbox, dead letters alone with --failed, without a data dir', async () => {
    const { env } = await seed();
    const failed = await run(['deliveries', 'list', '--failed', '--json', '--data-dir', '/nonexistent'], env);
    expect(failed.code).toBe(0);
    const rows = JSON.parse(failed.out) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: 'dead:1', status: 'failed', target: 'webhook:a%3Ab', attempts: 1, lastError: 'webhook answered 400 (refused)' });
    const all = await run(['deliveries', 'list'], env);
    expect(all.out).toMatch(/^done-1\s+done\s+reply\s+webhook:c\s+attempts 0$/m);
    expect(all.out.trimEnd().split('\n').at(-1)).toBe('2 deliveries, newest first');
    expect(JSON.parse((await run(['deliveries', 'list', '--json', '--chat', 'c'], env)).out).map((row: { id: string }) => row.id)).toEqual(['done-1']);
  });

  it('retries a dead letter by id: the gateways send it again', async () => {
    const { env, platform } = await seed();
    const retried = await run(['deliveries', 'retry', 'dead:1'], env);
    expect(retried).toMatchObject({ code: 0, out: expect.stringContaining('queued 1 delivery for retry: dead:1') });
    await until(() => platform.sentTo('a:b').length === 1);
    const again = await run(['deliveries', 'retry', 'dead:1'], env);
    expect(again.code).toBe(1);
    expect(again.err).toContain('no failed delivery dead:1');
  });

  it('says Redis cannot be reached without showing its password', async () => {
    const { code, err } = await run(['deliveries', 'list'], { THREADLINE_REDIS_URL: 'redis://:s3cret-pw@127.0.0.1:1' });
    expect(code).toBe(1);
    expect(err).toContain('TL_REDIS_UNAVAILABLE');
    expect(err).toContain('***');
    expect(err).not.toContain('s3cret-pw');
  });
});
