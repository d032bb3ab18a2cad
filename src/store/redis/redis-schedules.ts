import type { Redis } from 'ioredis';
import { formatDestination, parseDestination } from '../../session/delivery.js';
import type { ScheduleRecord, ScheduleState, ScheduleTable } from '../store.js';
import { chatFilterOf, sessionOf } from './redis-chat-filter.js';
import { homesKey } from './redis-homes.js';
import { IndexedRecords, type Fields } from './redis-indexed-records.js';
import type { RedisKeys } from './redis-keys.js';
import { atLeastZero, guarded } from './redis-scripts.js';
import { parseRouting, parseStoredDestination, requireRouting } from './redis-stored-values.js';

/**
 * Reminders and cron jobs on Redis: one hash per schedule, indexed by when it is next due
 * (ties by id), capped per chat and in all in the script that adds them. `advance` is a
 * compare-and-set in one script: of several instances running one due run, one moves it.
 */
export function redisScheduleTable(redis: Redis, keys: RedisKeys): ScheduleTable {
  const records = new IndexedRecords(redis, keys, 'schedules');
  return {
    add: (record, caps) => records.add(record.id, toFields(record), caps, record.nextAt),
    due: async (now, limit) => (await records.upTo(now, limit)).map(({ id, fields }) => toScheduleRecord(id, fields)),
    nextAt: () => records.lowestScore(),
    all: async () => (await records.every()).map(({ id, fields }) => toScheduleRecord(id, fields)),
    ofDestination: async (destination) =>
      (await records.ofDestination(formatDestination(destination))).map(({ id, fields }) => toScheduleRecord(id, fields)),
    get: async (id) => {
      const fields = await records.get(id);
      return fields === undefined ? undefined : toScheduleRecord(id, fields);
    },
    advance: (id, ranAt, nextAt) => records.advance(id, 'next_at', ranAt, nextAt),
    remove: (id) => records.remove(id),
    overdue: async (query) => {
      const filter = chatFilterOf(query);
      const homes = filter.any ? {} : await guarded(redis.hgetall(homesKey(keys)));
      const overdue = (await records.every()).filter(
        ({ fields }) =>
          Number(fields.next_at) < query.before &&
          (filter.any ||
            filter.destination(fields.destination) ||
            filter.destination(explicitTarget(fields.target)) ||
            filter.destination(homeOf(fields, homes)) ||
            filter.origin(fields.origin)),
      );
      // Latest due first, as SQLite orders them: next_at DESC, id DESC (every() read them ascending).
      return overdue
        .reverse()
        .slice(0, atLeastZero(query.limit))
        .map(({ id, fields }) => toScheduleState(id, fields));
    },
  };
}

/** A `home:<platform>` target: the platform, else undefined. */
function homePlatformOf(target: string | undefined): string | undefined {
  if (target === undefined || !target.startsWith('home:')) return undefined;
  const platform = target.slice('home:'.length);
  return platform.includes(':') ? undefined : platform;
}

/** A target naming a chat itself (`platform:chat[:thread]`), else undefined. */
function explicitTarget(target: string | undefined): string | undefined {
  if (target === undefined || target === 'origin' || target === 'home' || homePlatformOf(target) !== undefined) return undefined;
  return target;
}

/** The home channel a run goes to: its target's platform's, or for a bare `home` its origin's platform's. */
function homeOf(fields: Record<string, string>, homes: Record<string, string>): string | undefined {
  const platform = fields.target === 'home' ? sessionOf(fields.origin)?.platform : homePlatformOf(fields.target);
  return typeof platform === 'string' ? homes[platform] : undefined;
}

function toFields(record: ScheduleRecord): Fields & { destination: string } {
  return {
    origin: JSON.stringify(record.origin),
    destination: formatDestination(record.destination),
    target: record.target,
    text: record.text,
    cron: record.cron,
    timezone: record.timezone,
    next_at: record.nextAt,
    created_at: record.createdAt,
  };
}

/** The gateway's own read: a record whose origin or destination does not parse throws, as its callers expect. */
function toScheduleRecord(id: string, fields: Record<string, string>): ScheduleRecord {
  return { ...toScheduleState(id, fields), origin: requireRouting(fields.origin), destination: parseDestination(fields.destination ?? '') };
}

/** The forensic read: what can be read of a damaged record. */
function toScheduleState(id: string, fields: Record<string, string>): ScheduleState {
  return {
    id,
    origin: parseRouting(fields.origin),
    destination: parseStoredDestination(fields.destination),
    target: fields.target ?? '',
    text: fields.text ?? '',
    ...(fields.cron === undefined ? {} : { cron: fields.cron }),
    ...(fields.timezone === undefined ? {} : { timezone: fields.timezone }),
    nextAt: Number(fields.next_at),
    createdAt: Number(fields.created_at ?? 0),
  };
}
