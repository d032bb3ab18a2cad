import type { Redis } from 'ioredis';
import { ThreadlineError } from '../../errors.js';
import { redisFailure } from './redis-connection.js';
import type { RedisKeys } from './redis-keys.js';

/** BullMQ's scripts need Redis 6.2 or later. */
const MINIMUM_VERSION: readonly [number, number] = [6, 2];
const MINIMUM_VERSION_TEXT = MINIMUM_VERSION.join('.');

export interface RedisRequirements {
  readonly keys: RedisKeys;
}

export interface RedisSuitability {
  /** What would lose accepted work or break the queues: the gateway refuses to start. Each says the fix. */
  readonly problems: string[];
  /** What an operator should fix, though the gateway runs. Each says the fix. */
  readonly warnings: string[];
  /** What was found, for a report such as `threadline doctor`'s. */
  readonly facts: RedisFacts;
}

/** What Redis reports about itself (undefined: INFO left it out), and the partition count an earlier version recorded (null: none did): its queues are moved into mailboxes at start. */
export interface RedisFacts {
  readonly version: string | undefined;
  readonly mode: string | undefined;
  readonly evictionPolicy: string | undefined;
  readonly aofEnabled: string | undefined;
  readonly storedPartitions: string | null;
}

/**
 * Whether the Redis behind `redis` can hold threadline's work: its version, its eviction
 * policy, its persistence, and the partition count an earlier version left. Read only. INFO,
 * not CONFIG GET: managed Redis services often disable CONFIG. A failed command throws
 * TL_REDIS_UNAVAILABLE.
 */
export async function checkRedis(redis: Redis, requirements: RedisRequirements): Promise<RedisSuitability> {
  let facts: RedisFacts;
  try {
    const [server, memory, persistence, storedPartitions] = await Promise.all([
      redis.info('server'),
      redis.info('memory'),
      redis.info('persistence'),
      redis.get(requirements.keys.partitions),
    ]);
    const fields = parseInfo(`${server}\n${memory}\n${persistence}`);
    facts = {
      version: fields.get('redis_version'),
      mode: fields.get('redis_mode'),
      evictionPolicy: fields.get('maxmemory_policy'),
      aofEnabled: fields.get('aof_enabled'),
      storedPartitions,
    };
  } catch (error) {
    throw redisFailure(error);
  }
  return judge(facts);
}

/**
 * checkRedis, then: any problem → TL_REDIS_UNSUITABLE naming each with its fix; none → the
 * warnings are returned for the caller to log. Logs nothing itself.
 */
export async function assertRedisSuitable(redis: Redis, requirements: RedisRequirements): Promise<RedisSuitability> {
  const suitability = await checkRedis(redis, requirements);
  if (suitability.problems.length > 0) throw unsuitable(suitability.problems);
  return suitability;
}

/** TL_REDIS_UNSUITABLE naming each problem with its fix. */
export function unsuitable(problems: readonly string[]): ThreadlineError {
  const listed = problems.length === 1 ? problems[0]! : problems.map((problem, index) => `(${index + 1}) ${problem}`).join(' ');
  return new ThreadlineError('TL_REDIS_UNSUITABLE', `The Redis at THREADLINE_REDIS_URL cannot hold threadline's work: ${listed}`);
}

function judge(facts: RedisFacts): RedisSuitability {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (facts.version === undefined) {
    warnings.push(`Redis did not report its version (INFO server): make sure it is ${MINIMUM_VERSION_TEXT} or later, which BullMQ needs.`);
  } else if (!atLeast(facts.version, MINIMUM_VERSION)) {
    problems.push(`Redis ${facts.version} is older than ${MINIMUM_VERSION_TEXT}, which BullMQ needs: upgrade it.`);
  }
  if (facts.mode === 'cluster') {
    problems.push('Redis runs as a cluster, which threadline does not support yet: use a single primary (with Sentinel if you like).');
  }
  if (facts.evictionPolicy === undefined) {
    warnings.push('Redis did not report its maxmemory-policy (INFO memory): make sure it is noeviction, or a full Redis drops accepted messages and deliveries.');
  } else if (facts.evictionPolicy !== 'noeviction') {
    problems.push(
      `maxmemory-policy is ${facts.evictionPolicy}: a full Redis would silently drop accepted messages and deliveries. ` +
        'Run CONFIG SET maxmemory-policy noeviction, and set maxmemory-policy noeviction in redis.conf so a restart keeps it.',
    );
  }
  if (facts.aofEnabled === '0') {
    warnings.push(
      'the append-only file is off: a Redis restart loses what it accepted since its last snapshot. ' +
        'Run CONFIG SET appendonly yes, and set appendonly yes in redis.conf.',
    );
  }
  return { problems, warnings, facts };
}

/** `version` (e.g. `7.0.15`) is `minimum` or later, comparing major then minor. */
function atLeast(version: string, minimum: readonly [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10) || 0);
  return major !== minimum[0] ? major > minimum[0] : minor >= minimum[1];
}

/** INFO's `field:value` lines; section headers (`# Memory`) and blank lines are skipped. */
function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (line.startsWith('#') || colon <= 0) continue;
    fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}
