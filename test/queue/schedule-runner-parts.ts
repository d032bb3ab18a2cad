// What the BullMQ schedule runner's tests and their child-process fixture build a runner from.
import type { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import type { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { redisScheduleTable } from '../../src/store/redis/redis-schedules.js';
import type { Store } from '../../src/store/store.js';
import { systemClock } from '../../src/tools/clock.js';
import type { Deliverer } from '../../src/tools/deliver-later.js';
import type { ToolServices } from '../../src/tools/tool-services.js';

/** The leases of these tests: a lost runner's job moves on within about two seconds. */
export const LEASES = { lockDurationMs: 1_000, stalledIntervalMs: 500 } as const;

/** A runner's services over the schedules of `keys`: the runner and the tools use those alone. */
export function runnerServices(commands: Redis, keys: RedisKeys, deliverer: Deliverer, logger: Logger = pino({ level: 'silent' })): ToolServices {
  return {
    deliverer,
    store: { schedules: redisScheduleTable(commands, keys) } as unknown as Store,
    clock: systemClock,
    logger,
    dataDir: '/nonexistent',
    platforms: new Set(['telegram']),
  };
}
