import type { Redis } from 'ioredis';
import { formatDestination, parseDestination } from '../../session/delivery.js';
import {
  MAX_STATE_IDS,
  type DeliveryState,
  type OutboxRecords,
  type ProcessExit,
  type ProcessRecord,
  type ProcessState,
  type ProcessTable,
  type UnreportedProcess,
} from '../store.js';
import { chatFilterOf } from './redis-chat-filter.js';
import { IndexedRecords, type Fields } from './redis-indexed-records.js';
import type { RedisKeys } from './redis-keys.js';
import { atLeastZero } from './redis-scripts.js';
import { optionalNumber, parseRouting, parseStoredDestination, requireRouting } from './redis-stored-values.js';

/** Longest exit note kept: it explains an end, it is not the command's output. */
const MAX_EXIT_NOTE = 1000;

/**
 * The full state of each of `ids` the outbox holds (a process's completion notice, for
 * ProcessTable.unreported). Without it only the notice's status is known and none is reported.
 */
export type NoticeStates = (ids: readonly string[]) => Promise<Map<string, DeliveryState>>;

/** The delivery id of a process's completion notice, as the watcher records it. */
export function noticeIdOf(processId: string): string {
  return `proc:${processId}:done`;
}

/**
 * Background commands on Redis: one hash per process, in the order they were added, capped
 * per chat and in all (BackgroundCaps) in the script that adds them.
 */
export function redisProcessTable(redis: Redis, keys: RedisKeys, outbox: OutboxRecords, noticeStates?: NoticeStates): ProcessTable {
  const records = new IndexedRecords(redis, keys, 'processes');
  return {
    add: (record, caps) => {
      const fields = toFields(record);
      return records.add(record.id, fields, caps);
    },
    get: async (id) => {
      const fields = await records.get(id);
      return fields === undefined ? undefined : toProcessRecord(id, fields);
    },
    all: async () => (await records.every()).map(({ id, fields }) => toProcessRecord(id, fields)),
    ofDestination: async (destination) =>
      (await records.ofDestination(formatDestination(destination))).map(({ id, fields }) => toProcessRecord(id, fields)),
    ended: (id, exit) => records.set(id, exitFields(exit)),
    progressed: (id, progressSent) => records.set(id, { progress_sent: progressSent }),
    remove: async (id) => {
      await records.remove(id);
    },
    unreported: async (query) => {
      const filter = chatFilterOf(query);
      const candidates = (await records.every())
        .filter(({ fields }) => filter.any || filter.destination(fields.destination) || filter.origin(fields.origin))
        .map(({ id, fields }) => toProcessState(id, fields))
        .filter((state): state is UnreportedProcess['record'] => state.notifyOnComplete && state.exit !== undefined && state.exit.endedAt < query.before);
      // Latest end first, as SQLite orders them: ended_at DESC, id DESC.
      candidates.sort((a, b) => b.exit.endedAt - a.exit.endedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      const notices = await noticesOf(candidates.map((state) => noticeIdOf(state.id)), outbox, noticeStates);
      const unreported: UnreportedProcess[] = [];
      for (const record of candidates) {
        const notice = notices.get(noticeIdOf(record.id));
        if (notice?.status === 'done') continue;
        unreported.push(notice?.state === undefined ? { record } : { record, notice: notice.state });
      }
      return unreported.slice(0, atLeastZero(query.limit));
    },
  };
}

/** Each notice's status, and its full state when the outbox can tell it; read MAX_STATE_IDS at a time. */
async function noticesOf(
  ids: readonly string[],
  outbox: OutboxRecords,
  noticeStates: NoticeStates | undefined,
): Promise<Map<string, { status: string; state?: DeliveryState }>> {
  const notices = new Map<string, { status: string; state?: DeliveryState }>();
  for (let i = 0; i < ids.length; i += MAX_STATE_IDS) {
    const chunk = ids.slice(i, i + MAX_STATE_IDS);
    if (noticeStates === undefined) {
      for (const [id, status] of await outbox.states(chunk)) notices.set(id, { status });
    } else {
      for (const [id, state] of await noticeStates(chunk)) notices.set(id, { status: state.status, state });
    }
  }
  return notices;
}

function toFields(record: ProcessRecord): Fields & { destination: string } {
  return {
    origin: JSON.stringify(record.origin),
    destination: formatDestination(record.destination),
    command: record.command,
    pid: record.pid,
    instance: record.instance,
    started_at: record.startedAt,
    notify_on_complete: record.notifyOnComplete ? 1 : 0,
    check_interval_ms: record.checkIntervalMs,
    progress_sent: record.progressSent,
    ...(record.exit === undefined ? {} : exitFields(record.exit)),
  };
}

/** Every exit field, unset ones included: a second end replaces the first whole, as SQLite's UPDATE does. */
function exitFields(exit: ProcessExit): Fields {
  return {
    ended_at: exit.endedAt,
    exit_code: exit.code,
    exit_signal: exit.signal,
    exit_note: exit.note?.slice(0, MAX_EXIT_NOTE),
  };
}

/** The gateway's own read: a record whose origin or destination does not parse throws, as its callers expect. */
function toProcessRecord(id: string, fields: Record<string, string>): ProcessRecord {
  return { ...toProcessState(id, fields), origin: requireRouting(fields.origin), destination: parseDestination(fields.destination ?? '') };
}

/** The forensic read: what can be read of a damaged record. */
function toProcessState(id: string, fields: Record<string, string>): ProcessState {
  const endedAt = optionalNumber(fields.ended_at);
  const code = optionalNumber(fields.exit_code);
  const checkIntervalMs = optionalNumber(fields.check_interval_ms);
  return {
    id,
    origin: parseRouting(fields.origin),
    destination: parseStoredDestination(fields.destination),
    command: fields.command ?? '',
    pid: Number(fields.pid ?? 0),
    ...(fields.instance === undefined ? {} : { instance: fields.instance }),
    startedAt: Number(fields.started_at ?? 0),
    notifyOnComplete: fields.notify_on_complete === '1',
    ...(checkIntervalMs === undefined ? {} : { checkIntervalMs }),
    progressSent: Number(fields.progress_sent ?? 0),
    ...(endedAt === undefined
      ? {}
      : {
          exit: {
            endedAt,
            ...(code === undefined ? {} : { code }),
            ...(fields.exit_signal === undefined ? {} : { signal: fields.exit_signal }),
            ...(fields.exit_note === undefined ? {} : { note: fields.exit_note }),
          },
        }),
  };
}
