import type { Redis } from 'ioredis';
import { redisFailure } from './redis-connection.js';
import { unsuitable } from './redis-requirements.js';

/**
 * THREADLINE_REDIS_FSYNC. `server`: a write is as durable as the server's persistence makes it
 * (with AOF `everysec`, a machine crash may lose the last second). `always`: every write the
 * gateway acknowledges is on disk first, which the server's `appendfsync always` gives.
 */
export type RedisFsync = 'server' | 'always';

/**
 * With `always`, refuses a Redis that does not fsync every write: AOF off, `appendfsync` other
 * than `always`, or a server that will not say (CONFIG disabled), each with its fix.
 * TL_REDIS_UNSUITABLE; TL_REDIS_UNAVAILABLE when Redis does not answer.
 */
export async function assertRedisFsync(redis: Redis, fsync: RedisFsync): Promise<void> {
  if (fsync === 'server') return;
  let aof: string | undefined;
  let appendfsync: string | undefined;
  try {
    aof = /^aof_enabled:(\d)/m.exec(await redis.info('persistence'))?.[1];
    appendfsync = await configGet(redis, 'appendfsync');
  } catch (error) {
    throw redisFailure(error);
  }
  const fix = 'set appendonly yes and appendfsync always in redis.conf (CONFIG SET appendfsync always at runtime), or THREADLINE_REDIS_FSYNC=server to accept what the server gives';
  if (aof !== '1') throw unsuitable([`THREADLINE_REDIS_FSYNC=always needs the append-only file, which is off: ${fix}.`]);
  if (appendfsync === undefined) throw unsuitable([`THREADLINE_REDIS_FSYNC=always needs appendfsync always, which this Redis will not report (CONFIG GET is disabled): ${fix}.`]);
  if (appendfsync !== 'always') throw unsuitable([`THREADLINE_REDIS_FSYNC=always needs appendfsync always, and this Redis has ${appendfsync}: ${fix}.`]);
}

/** CONFIG GET's value, or undefined where the command is refused (managed services often rename or disable it). */
async function configGet(redis: Redis, name: string): Promise<string | undefined> {
  try {
    const reply = (await redis.config('GET', name)) as string[];
    return reply[1];
  } catch (error) {
    if (/unknown command|NOPERM|ERR/i.test(String((error as Error).message))) return undefined;
    throw error;
  }
}
