import type { Redis } from 'ioredis';
import { ThreadlineError } from '../../errors.js';
import type { RoutingSnapshot } from '../../session/index.js';
import type { AcceptOutcome, MessageLog, StoredMessage } from '../store.js';
import { callResultsKey } from './redis-calls.js';
import type { RedisKeys } from './redis-keys.js';
import { guarded, luaScript } from './redis-scripts.js';

/**
 * Checks and appends in one script, in SQLite's order: a seen idempotency key, the
 * destination's open deliveries plus its messages waiting for their turn (a waiting message
 * is a delivery to come), all open deliveries, then all waiting messages.
 */
const ACCEPT = `
local messages, order, destinations, waiting, open, openTotal, intake = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local id, json, receivedAt, destination = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local maxMine, maxTotal, maxPending = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local answer, expiresAt = ARGV[8], tonumber(ARGV[9])
if intake ~= '' then
  local seen = redis.call('GET', intake)
  -- This very accept, run again after its answer was lost: it was accepted.
  if seen == answer then return {'accepted'} end
  if seen then
    -- The first message, while it still waits: its hand-over to the queue may have failed.
    local ok, first = pcall(cjson.decode, seen)
    local row = ok and type(first) == 'table' and type(first.messageId) == 'string' and redis.call('HGET', messages, first.messageId)
    return {'duplicate', seen, row or ''}
  end
end
local mine = tonumber(redis.call('HGET', open, destination) or '0') + tonumber(redis.call('HGET', waiting, destination) or '0')
if mine >= maxMine then return {'destination', mine} end
local total = tonumber(redis.call('GET', openTotal) or '0')
if total >= maxTotal then return {'total', total} end
if maxPending >= 0 then
  local pending = redis.call('ZCARD', order)
  if pending >= maxPending then return {'messages', pending} end
end
if redis.call('HSETNX', messages, id, json) == 1 then
  redis.call('ZADD', order, receivedAt, id)
  redis.call('HSET', destinations, id, destination)
  redis.call('HINCRBY', waiting, destination, 1)
end
if intake ~= '' then
  local ms = redis.call('TIME')
  if expiresAt > tonumber(ms[1]) * 1000 + math.floor(tonumber(ms[2]) / 1000) then
    redis.call('SET', intake, answer, 'PXAT', ARGV[9])
  end
end
return {'accepted'}
`;

/** Forgets a message, what it counted toward its destination's cap, and what its turn's calls recorded. */
const COMPLETE = `
local messages, order, destinations, waiting, calls = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id = ARGV[1]
local destination = redis.call('HGET', destinations, id)
redis.call('HDEL', messages, id)
redis.call('ZREM', order, id)
redis.call('DEL', calls)
if destination then
  redis.call('HDEL', destinations, id)
  if redis.call('HINCRBY', waiting, destination, -1) <= 0 then redis.call('HDEL', waiting, destination) end
end
return 1
`;

/**
 * The accepted messages on Redis, shared by every instance: a hash of them by id, a sorted
 * set by receivedAt (ties by id: ids are time-ordered), and per destination the count of those
 * waiting for their turn. Completed messages are deleted; idempotency keys expire in Redis
 * at their expiresAt, so memory is bounded by the pending cap and the keys' lifetime.
 */
export function redisMessageLog(redis: Redis, keys: RedisKeys): MessageLog {
  const table = {
    messages: keys.key('messages'),
    order: keys.key('messages', 'order'),
    destinations: keys.key('messages', 'destination'),
    waiting: keys.key('messages', 'waiting'),
  };
  const accept = luaScript(redis, 'threadlineAcceptMessage', ACCEPT);
  const complete = luaScript(redis, 'threadlineCompleteMessage', COMPLETE);
  return {
    accept: async (message, checks) => {
      const { idempotency } = checks;
      const answer = (await accept(
        [
          table.messages,
          table.order,
          table.destinations,
          table.waiting,
          keys.openDeliveries,
          keys.openDeliveriesTotal,
          idempotency === undefined ? '' : keys.key('intake', idempotency.key),
        ],
        [
          message.id,
          encodeMessage(message),
          message.receivedAt,
          keys.openField(checks.destination),
          checks.maxOpenPerDestination,
          checks.maxOpenTotal,
          checks.maxPendingMessages ?? -1,
          idempotency?.answer ?? '',
          idempotency?.expiresAt ?? 0,
        ],
      )) as [string, (string | number)?, string?];
      return toOutcome(answer);
    },
    complete: async (id) => {
      await complete([table.messages, table.order, table.destinations, table.waiting, callResultsKey(keys, id)], [id]);
    },
    pending: async () => {
      const [ids, rows] = await pendingRows(redis, table.order, table.messages);
      const messages: StoredMessage[] = [];
      ids.forEach((id, i) => {
        const message = decodeMessage(rows[i]);
        if (message !== undefined && message.id === id) messages.push(message);
      });
      return messages;
    },
  };
}

/** The ids in order and their rows; one completed between the two reads reads as null and is left out. */
async function pendingRows(redis: Redis, order: string, messages: string): Promise<[string[], (string | null)[]]> {
  const ids = await guarded(redis.zrange(order, 0, -1));
  if (ids.length === 0) return [[], []];
  return [ids, await guarded(redis.hmget(messages, ...ids))];
}

function toOutcome([status, detail, first]: [string, (string | number)?, string?]): AcceptOutcome {
  switch (status) {
    case 'accepted':
      return { status: 'accepted' };
    case 'duplicate': {
      const waiting = first === undefined || first === '' ? undefined : decodeMessage(first);
      return { status: 'duplicate', answer: String(detail), ...(waiting === undefined ? {} : { waiting }) };
    }
    case 'destination':
    case 'total':
    case 'messages':
      return { status: 'full', scope: status, open: Number(detail) };
    default:
      throw new ThreadlineError('TL_INTERNAL', `Unexpected answer from the accept script (${status}): is another version's script loaded under its name?`);
  }
}

function encodeMessage(message: StoredMessage): string {
  return JSON.stringify({ id: message.id, routing: message.routing, text: message.text, receivedAt: message.receivedAt });
}

/**
 * A stored message, or undefined when it is not one (damaged by hand, or written by another
 * version): a restart runs what it can read rather than none of it.
 */
function decodeMessage(json: string | null | undefined): StoredMessage | undefined {
  if (typeof json !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, routing, text, receivedAt } = value as Record<string, unknown>;
  if (typeof id !== 'string' || typeof text !== 'string' || typeof receivedAt !== 'number') return undefined;
  if (typeof routing !== 'object' || routing === null) return undefined;
  return { id, routing: routing as RoutingSnapshot, text, receivedAt };
}
