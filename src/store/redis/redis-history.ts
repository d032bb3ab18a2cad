import type { Redis } from 'ioredis';
import { formatDestination } from '../../session/delivery.js';
import { HISTORY_RETENTION_MS } from '../sqlite-prune.js';
import type { HistoryEntry, HistoryLog } from '../store.js';
import type { RedisKeys } from './redis-keys.js';
import { atLeastZero, luaScript } from './redis-scripts.js';

/**
 * Appends entries numbered from one counter shared by every list, so a session's entries and
 * its chat's mirrored ones interleave in the order they were written, as SQLite's seq does;
 * then keeps the newest `keep`, and forgets the list once it has been idle for the retention.
 */
const APPEND = `
local seq, list = KEYS[1], KEYS[2]
local keep, retentionMs = tonumber(ARGV[1]), ARGV[2]
local n = #ARGV - 2
local last = redis.call('INCRBY', seq, n)
for i = 1, n do
  redis.call('RPUSH', list, string.format('%d', last - n + i) .. ':' .. ARGV[i + 2])
end
if keep <= 0 then
  redis.call('DEL', list)
else
  redis.call('LTRIM', list, -keep, -1)
  redis.call('PEXPIRE', list, retentionMs)
end
return 1
`;

/** The newest ARGV[1] entries of a session's list and of its chat's mirror list, read at one moment. */
const RECENT = `
local count = tonumber(ARGV[1])
return { redis.call('LRANGE', KEYS[1], -count, -1), redis.call('LRANGE', KEYS[2], -count, -1) }
`;

interface Numbered {
  readonly seq: number;
  readonly entry: HistoryEntry;
}

/**
 * Conversations with the model on Redis: one list per session and one per chat and thread for
 * mirrored text, each trimmed to `keep` on every write and expiring after HISTORY_RETENTION_MS
 * without one (a session not seen for a month starts afresh, as in SQLite).
 */
export function redisHistoryLog(redis: Redis, keys: RedisKeys, retentionMs = HISTORY_RETENTION_MS): HistoryLog {
  const seq = keys.key('history', 'seq');
  const sessionList = (sessionId: string) => keys.key('history', 'session', sessionId);
  const mirrorList = (destination: string) => keys.key('history', 'mirror', destination);
  const append = luaScript(redis, 'threadlineAppendHistory', APPEND);
  // A script, not MULTI: ioredis builds each MULTI by copying every command defined on the connection.
  const readRecent = luaScript(redis, 'threadlineRecentHistory', RECENT);
  return {
    append: async (sessionId, _destination, entries, keep) => {
      await append([seq, sessionList(sessionId)], [atLeastZero(keep), retentionMs, ...entries.map(encodeEntry)]);
    },
    mirror: async (destination, entry, keep) => {
      await append([seq, mirrorList(formatDestination(destination))], [atLeastZero(keep), retentionMs, encodeEntry(entry)]);
    },
    recent: async (sessionId, destination, limit) => {
      const count = atLeastZero(limit);
      // LRANGE -0 -1 would be the whole list.
      if (count === 0) return [];
      const [own, mirrored] = (await readRecent([sessionList(sessionId), mirrorList(formatDestination(destination))], [count])) as [string[], string[]];
      const numbered = [...own, ...mirrored].map(decodeEntry).filter((item) => item !== undefined);
      numbered.sort((a, b) => a.seq - b.seq);
      return numbered.slice(-count).map((item) => item.entry);
    },
  };
}

function encodeEntry(entry: HistoryEntry): string {
  return JSON.stringify({
    role: entry.role,
    text: entry.text,
    ...(entry.source === undefined ? {} : { source: entry.source }),
    ...(entry.extra === undefined ? {} : { extra: entry.extra }),
    at: entry.at,
  });
}

/** `<seq>:<json>` as APPEND wrote it, or undefined for an element that is not (it is left out, not fatal). */
function decodeEntry(element: string): Numbered | undefined {
  const colon = element.indexOf(':');
  const seq = Number(element.slice(0, colon));
  if (colon < 1 || !Number.isSafeInteger(seq)) return undefined;
  try {
    const value = JSON.parse(element.slice(colon + 1)) as Record<string, unknown>;
    const { role, text, source, extra, at } = value;
    if ((role !== 'user' && role !== 'assistant' && role !== 'tool') || typeof text !== 'string' || typeof at !== 'number') return undefined;
    return {
      seq,
      entry: {
        role,
        text,
        ...(typeof source === 'string' ? { source } : {}),
        ...(typeof extra === 'string' ? { extra } : {}),
        at,
      },
    };
  } catch {
    return undefined;
  }
}
