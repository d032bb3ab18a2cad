import type { Redis } from 'ioredis';
import { ThreadlineError } from '../../errors.js';
import type { BackgroundCaps, CappedAdd } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { atLeastZero, guarded, hashOrUndefined, luaScript, pipelined } from './redis-scripts.js';

/**
 * Adds a record unless its destination's or the table's count is at its cap, in SQLite's
 * order (destination, total, then a taken id); its score is the given one, or the next of the
 * table's counter (insertion order).
 */
const CAPPED_ADD = `
local record, all, mine, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, maxMine, maxTotal, score = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local n = redis.call('ZCARD', mine)
if n >= maxMine then return {'destination', n} end
local total = redis.call('ZCARD', all)
if total >= maxTotal then return {'total', total} end
if redis.call('EXISTS', record) == 1 then return {'taken'} end
if score == '' then score = redis.call('INCR', seq) end
redis.call('HSET', record, unpack(ARGV, 5))
redis.call('ZADD', all, score, id)
redis.call('ZADD', mine, score, id)
return {'added'}
`;

/** Sets and deletes fields of a record that exists; a removed one is not brought back half-made. */
const UPDATE = `
local record = KEYS[1]
if redis.call('EXISTS', record) == 0 then return 0 end
local count = tonumber(ARGV[1])
if count > 0 then redis.call('HSET', record, unpack(ARGV, 2, 1 + count * 2)) end
if #ARGV > 1 + count * 2 then redis.call('HDEL', record, unpack(ARGV, 2 + count * 2)) end
return 1
`;

/**
 * Compare-and-set on a record's score field: nothing changes unless it still holds ARGV[2].
 * Then the record moves to the new score, or goes when there is none. 1 when it changed.
 */
const ADVANCE = `
local record, all = KEYS[1], KEYS[2]
local id, expected, score, field, destinationPrefix = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local current = redis.call('HGET', record, field)
if not current or tonumber(current) ~= expected then return 0 end
local destination = redis.call('HGET', record, 'destination') or ''
if score == '' then
  redis.call('DEL', record)
  redis.call('ZREM', all, id)
  redis.call('ZREM', destinationPrefix .. destination, id)
else
  redis.call('HSET', record, field, score)
  redis.call('ZADD', all, score, id)
  redis.call('ZADD', destinationPrefix .. destination, score, id)
end
return 1
`;

/** Deletes a record and its entries in both indexes; 1 when it existed. */
const REMOVE = `
local record, all = KEYS[1], KEYS[2]
local id, destinationPrefix = ARGV[1], ARGV[2]
local destination = redis.call('HGET', record, 'destination') or ''
local existed = redis.call('DEL', record)
redis.call('ZREM', all, id)
redis.call('ZREM', destinationPrefix .. destination, id)
return existed
`;

/** A record's fields as stored: absent fields are unset (SQLite's NULL). */
export type Fields = Record<string, string | number | undefined>;

/**
 * A table of records on Redis: each record a hash (`<table>:<id>`, a `destination` field
 * among its own), indexed by one sorted set of all and one per destination, both by the same
 * score (insertion order, or a due time). Caps bound its size, so reading all of it is bounded.
 */
export class IndexedRecords {
  private readonly all: string;
  private readonly seq: string;
  private readonly destinationPrefix: string;
  private readonly cappedAdd;
  private readonly update;
  private readonly compareAndSet;
  private readonly removeRecord;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly table: string,
  ) {
    this.all = keys.key(table, 'index');
    this.seq = keys.key(table, 'seq');
    // Ends with ':' so the scripts can name a destination's index from its stored destination.
    this.destinationPrefix = `${keys.key(table, 'by-destination')}:`;
    this.cappedAdd = luaScript(redis, 'threadlineCappedAdd', CAPPED_ADD);
    this.update = luaScript(redis, 'threadlineUpdateRecord', UPDATE);
    this.compareAndSet = luaScript(redis, 'threadlineAdvanceRecord', ADVANCE);
    this.removeRecord = luaScript(redis, 'threadlineRemoveRecord', REMOVE);
  }

  /** Adds the record unless a cap refuses it or its id is taken; `score` undefined: after every other. */
  async add(id: string, fields: Fields & { destination: string }, caps: BackgroundCaps, score?: number): Promise<CappedAdd> {
    const [status, open] = (await this.cappedAdd(
      [this.recordKey(id), this.all, this.byDestination(fields.destination), this.seq],
      [id, caps.maxPerDestination, caps.maxTotal, score ?? '', ...pairsOf(fields)],
    )) as [string, number?];
    if (status === 'added' || status === 'taken') return { status };
    if (status === 'destination' || status === 'total') return { status: 'full', scope: status, open: Number(open) };
    throw new ThreadlineError('TL_INTERNAL', `Unexpected answer from the add script (${status}): is another version's script loaded under its name?`);
  }

  /** One record's fields, or undefined. */
  async get(id: string): Promise<Record<string, string> | undefined> {
    return hashOrUndefined(await guarded(this.redis.hgetall(this.recordKey(id))));
  }

  /** Sets the defined fields and unsets the undefined ones of a record that exists. */
  async set(id: string, fields: Fields): Promise<void> {
    const entries = Object.entries(fields);
    const present = entries.filter(([, value]) => value !== undefined) as [string, string | number][];
    const absent = entries.filter(([, value]) => value === undefined).map(([field]) => field);
    await this.update([this.recordKey(id)], [present.length, ...present.flat(), ...absent]);
  }

  /** Moves the record's score (`field`) from `expected` to `score`, or removes it when undefined; true when it changed. */
  async advance(id: string, field: string, expected: number, score: number | undefined): Promise<boolean> {
    return (await this.compareAndSet([this.recordKey(id), this.all], [id, expected, score ?? '', field, this.destinationPrefix])) === 1;
  }

  /** True when it existed. */
  async remove(id: string): Promise<boolean> {
    return (await this.removeRecord([this.recordKey(id), this.all], [id, this.destinationPrefix])) === 1;
  }

  /** Every record, by score (ties by id). */
  async every(): Promise<Array<{ id: string; fields: Record<string, string> }>> {
    return this.read(await guarded(this.redis.zrange(this.all, 0, -1)));
  }

  /** The records of one destination (formatDestination's spelling), by score. */
  async ofDestination(destination: string): Promise<Array<{ id: string; fields: Record<string, string> }>> {
    return this.read(await guarded(this.redis.zrange(this.byDestination(destination), 0, -1)));
  }

  /** Up to `limit` records scored at most `max`, by score. */
  async upTo(max: number, limit: number): Promise<Array<{ id: string; fields: Record<string, string> }>> {
    const count = atLeastZero(limit);
    // A count of 0 asks for nothing: no round trip.
    if (count === 0) return [];
    return this.read(await guarded(this.redis.zrangebyscore(this.all, '-inf', max, 'LIMIT', 0, count)));
  }

  /** The lowest score, or undefined when the table is empty. */
  async lowestScore(): Promise<number | undefined> {
    const [, score] = await guarded(this.redis.zrange(this.all, 0, 0, 'WITHSCORES'));
    return score === undefined ? undefined : Number(score);
  }

  /** The records of `ids` in their order; one removed meanwhile is left out. */
  private async read(ids: string[]): Promise<Array<{ id: string; fields: Record<string, string> }>> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.recordKey(id));
    const hashes = await pipelined(pipeline);
    const records: Array<{ id: string; fields: Record<string, string> }> = [];
    ids.forEach((id, i) => {
      const fields = hashOrUndefined(hashes[i]);
      if (fields !== undefined) records.push({ id, fields });
    });
    return records;
  }

  private recordKey(id: string): string {
    return this.keys.key(this.table, 'record', id);
  }

  private byDestination(destination: string): string {
    return `${this.destinationPrefix}${destination}`;
  }
}

/** HSET's arguments: defined fields only. */
function pairsOf(fields: Fields): (string | number)[] {
  return Object.entries(fields).flatMap(([field, value]) => (value === undefined ? [] : [field, value]));
}
