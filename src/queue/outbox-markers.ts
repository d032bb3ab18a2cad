import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { luaScript, type LuaScript } from '../store/redis/redis-scripts.js';

/** Where a recorded delivery stands, as its marker says. */
export type MarkerState = 'open' | 'done' | 'failed';

/** A delivery's marker: its state and its destination (its mailbox and counter field). */
export interface Marker {
  readonly state: MarkerState;
  readonly field: string;
}

/** A finished delivery as its marker keeps it: its last data, when it finished and, for a dead letter, why. */
export interface FinishedRecord {
  readonly id: string;
  readonly state: 'done' | 'failed';
  readonly data: string;
  readonly finishedAt: number;
  readonly reason?: string;
}

/** Finished deliveries indexed per state at most, whatever their age: a busy chat cannot fill Redis with its history. */
export const FINISHED_KEPT = 10_000;

// The open counters count exactly the markers in state 'open': every change of state moves
// them in the same script, so a repeated move (a delivery run again after a crash) counts once.
// A finish also keeps the delivery's last data in the marker and indexes it (KEYS[4] done,
// KEYS[5] failed) by when it finished, trimmed by age and count; reopening unindexes it.
const MOVE = `
local current = redis.call('HGET', KEYS[1], 'state')
if ARGV[1] == 'create' then
  if current then return {0, current} end
  redis.call('HSET', KEYS[1], 'state', 'open', 'f', ARGV[4])
  current = 'absent'
elseif not current then
  return {0, ''}
elseif current == ARGV[2] then
  return {0, current}
else
  redis.call('HSET', KEYS[1], 'state', ARGV[2])
end
if ARGV[5] == '' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
local id = ARGV[3]
if ARGV[2] == 'open' then
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZREM', KEYS[5], id)
  redis.call('HDEL', KEYS[1], 'd', 't', 'r')
else
  local index = ARGV[2] == 'done' and KEYS[4] or KEYS[5]
  local now = tonumber(ARGV[7])
  redis.call('HSET', KEYS[1], 'd', ARGV[6], 't', ARGV[7], 'r', ARGV[8])
  redis.call('ZADD', index, now, id)
  if ARGV[5] ~= '' then redis.call('ZREMRANGEBYSCORE', index, '-inf', now - tonumber(ARGV[5])) end
  redis.call('ZREMRANGEBYRANK', index, 0, -(tonumber(ARGV[9]) + 1))
end
local delta = (ARGV[2] == 'open' and 1 or 0) - (current == 'open' and 1 or 0)
if delta ~= 0 then
  local field = redis.call('HGET', KEYS[1], 'f')
  if redis.call('HINCRBY', KEYS[2], field, delta) <= 0 then redis.call('HDEL', KEYS[2], field) end
  if redis.call('INCRBY', KEYS[3], delta) <= 0 then redis.call('DEL', KEYS[3]) end
end
return {1, current}
`;

/**
 * The outbox's own record of each delivery (`outbox:delivery:<job id>`): it makes add()
 * idempotent for as long as it is kept, keeps the open-delivery counters (RedisKeys) exact,
 * and once the delivery is finished holds its last data, indexed by state, for listing and retrying.
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

  /** The index of finished deliveries in `state`: job id scored by when it finished. */
  index(state: 'done' | 'failed'): string {
    return this.keys.key('outbox', state === 'done' ? 'sent' : 'dead');
  }

  /** Records a new open delivery to `field` and counts it; false (and nothing changed) when it was recorded before. */
  async create(jobId: string, field: string): Promise<{ created: boolean; state: MarkerState | undefined }> {
    const [created, state] = await this.run(jobId, ['create', 'open', jobId, field, '', '', '', '', FINISHED_KEPT]);
    return { created, state: created ? 'open' : (state as MarkerState) };
  }

  /** Opens a finished delivery again (a dead letter retried): counted open, kept until it finishes. False when it was not finished. */
  async reopen(jobId: string): Promise<boolean> {
    const [moved] = await this.run(jobId, ['move', 'open', jobId, '', '', '', '', '', FINISHED_KEPT]);
    return moved;
  }

  /**
   * Finishes the delivery: no longer counted open, its last `data` (and `reason`) kept `ttlMs`
   * more. False when it was in that state already or there is no marker.
   */
  async finish(jobId: string, state: 'done' | 'failed', ttlMs: number, data: string, reason = ''): Promise<boolean> {
    const ttl = String(Math.max(1, Math.round(ttlMs)));
    const [moved] = await this.run(jobId, ['move', state, jobId, '', ttl, data, String(Date.now()), reason, FINISHED_KEPT]);
    return moved;
  }

  /** The markers of `jobIds`, in their order; undefined where there is none (never recorded, or expired). */
  async read(jobIds: readonly string[]): Promise<Array<Marker | undefined>> {
    if (jobIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const jobId of jobIds) pipeline.hmget(this.key(jobId), 'state', 'f');
    const answers = (await pipeline.exec()) ?? [];
    return answers.map(([error, value]) => {
      if (error) throw error;
      const [state, field] = value as Array<string | null>;
      if (state !== 'open' && state !== 'done' && state !== 'failed') return undefined;
      return { state, field: field ?? '' };
    });
  }

  /** The finished deliveries in `state`, newest first, from `start` on (`count` of them); expired ones are left out. */
  async finished(state: 'done' | 'failed', start: number, count: number): Promise<{ records: FinishedRecord[]; more: boolean }> {
    const ids = await this.redis.zrevrange(this.index(state), start, start + count - 1);
    if (ids.length === 0) return { records: [], more: false };
    const pipeline = this.redis.pipeline();
    for (const jobId of ids) pipeline.hmget(this.key(jobId), 'state', 'd', 't', 'r');
    const answers = (await pipeline.exec()) ?? [];
    const records: FinishedRecord[] = [];
    answers.forEach(([error, value], index) => {
      if (error) throw error;
      const [found, data, finishedAt, reason] = value as Array<string | null>;
      if (found !== state || typeof data !== 'string') return;
      records.push({ id: ids[index]!, state, data, finishedAt: Number(finishedAt), ...(reason !== null && reason !== undefined && reason !== '' ? { reason } : {}) });
    });
    return { records, more: ids.length === count };
  }

  private async run(jobId: string, args: Array<string | number>): Promise<[boolean, string]> {
    const answer = (await this.moveScript(
      [this.key(jobId), this.keys.openDeliveries, this.keys.openDeliveriesTotal, this.index('done'), this.index('failed')],
      args,
    )) as [number, string];
    return [answer[0] === 1, answer[1]];
  }
}
