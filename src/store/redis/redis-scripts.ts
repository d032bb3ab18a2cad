import type { Redis } from 'ioredis';
import { redisFailure } from './redis-connection.js';

/** A Lua script run atomically by Redis: its keys, then its arguments. */
export type LuaScript = (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/**
 * A script registered on `redis` under `name` (EVALSHA, loaded again after a Redis restart):
 * what store.ts calls atomic is one script, since several gateway instances write at once.
 * A failure is TL_REDIS_UNAVAILABLE.
 */
export function luaScript(redis: Redis, name: string, lua: string): LuaScript {
  const commands = redis as unknown as Record<string, ((...args: (string | number)[]) => Promise<unknown>) | undefined>;
  // The connection is shared: a second store on it finds the command already defined.
  if (commands[name] === undefined) redis.defineCommand(name, { lua });
  return (keys, args) => guarded(commands[name]!.call(redis, keys.length, ...keys, ...args));
}

/** The command's answer, or TL_REDIS_UNAVAILABLE saying Redis failed it. */
export async function guarded<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (error) {
    throw redisFailure(error);
  }
}

/** A pipeline's answers, each command's error thrown as TL_REDIS_UNAVAILABLE. */
export async function pipelined(pipeline: ReturnType<Redis['pipeline']>): Promise<unknown[]> {
  const results = (await guarded(pipeline.exec())) ?? [];
  return results.map(([error, value]) => {
    if (error !== null) throw redisFailure(error);
    return value;
  });
}

/** A hash read back (HGETALL): undefined for a key that does not exist. */
export function hashOrUndefined(fields: unknown): Record<string, string> | undefined {
  if (fields === null || typeof fields !== 'object') return undefined;
  return Object.keys(fields).length === 0 ? undefined : (fields as Record<string, string>);
}

/** SQLite reads a negative LIMIT as "no limit", Redis a negative count too: a caller's count never means that. */
export function atLeastZero(count: number): number {
  return Math.max(0, Math.floor(count));
}
