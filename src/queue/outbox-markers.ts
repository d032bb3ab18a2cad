import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';

/** Where a recorded delivery stands, as its marker says. */
export type MarkerState = 'open' | 'done' | 'failed';

/** A delivery's marker: its state, its partition and its destination's counter field. */
export interface Marker {
  readonly state: MarkerState;
  readonly partition: number;
  readonly field: string;
}

// The open counters count exactly the markers in state 'open': every change of state moves
// them in the same script, so a repeated move (a job run again after a crash) counts once.
const MOVE = `
local current = redis.call('HGET', KEYS[1], 'state')
if ARGV[1] == 'create' then
  if current then return {0, current} end
  redis.call('HSET', KEYS[1], 'state', 'open', 'p', ARGV[3], 'f', ARGV[4])
  current = 'absent'
elseif not current then
  return {0, ''}
elseif current == ARGV[2] then
  return {0, current}
else
  redis.call('HSET', KEYS[1], 'state', ARGV[2])
end
if ARGV[5] == '' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
local delta = (ARGV[2] == 'open' and 1 or 0) - (current == 'open' and 1 or 0)
if delta ~= 0 then
  local field = redis.call('HGET', KEYS[1], 'f')
  if redis.call('HINCRBY', KEYS[2], field, delta) <= 0 then redis.call('HDEL', KEYS[2], field) end
  if redis.call('INCRBY', KEYS[3], delta) <= 0 then redis.call('DEL', KEYS[3]) end
end
return {1, current}
`;

/**
 * The outbox's own record of each delivery beside its BullMQ job: it makes add() idempotent
 * for as long as the job is kept, and keeps the open-delivery counters (RedisKeys) exact.
 */
export class OutboxMarkers {
  private readonly moveScript: LuaScript;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.moveScript = luaScript(redis, 'threadlineOutboxMarkerMove', MOVE);
  }

  /** The marker key of the job `jobId`. */
  key(jobId: string): string {
    return this.keys.key('outbox', 'delivery', jobId);
  }

  /** Records a new open delivery and counts it; false (and nothing changed) when it was recorded before. */
  async create(jobId: string, partition: number, field: string): Promise<{ created: boolean; state: MarkerState | undefined }> {
    const [created, state] = await this.run(jobId, ['create', 'open', String(partition), field, '']);
    return { created, state: created ? 'open' : (state as MarkerState) };
  }

  /**
   * Moves the marker to `state` and the counters with it; kept `ttlMs` more (forever when
   * undefined). False when it was in that state already or there is no marker.
   */
  async move(jobId: string, state: MarkerState, ttlMs: number | undefined): Promise<boolean> {
    const [moved] = await this.run(jobId, ['move', state, '', '', ttlMs === undefined ? '' : String(Math.max(0, Math.round(ttlMs)))]);
    return moved;
  }

  /** The markers of `jobIds`, in their order; undefined where there is none (never recorded, or expired). */
  async read(jobIds: readonly string[]): Promise<Array<Marker | undefined>> {
    if (jobIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const jobId of jobIds) pipeline.hmget(this.key(jobId), 'state', 'p', 'f');
    const answers = (await pipeline.exec()) ?? [];
    return answers.map(([error, value]) => {
      if (error) throw error;
      const [state, partition, field] = value as Array<string | null>;
      if (state !== 'open' && state !== 'done' && state !== 'failed') return undefined;
      return { state, partition: Number(partition), field: field ?? '' };
    });
  }

  private async run(jobId: string, args: string[]): Promise<[boolean, string]> {
    const answer = (await this.moveScript([this.key(jobId), this.keys.openDeliveries, this.keys.openDeliveriesTotal], args)) as [number, string];
    return [answer[0] === 1, answer[1]];
  }
}
