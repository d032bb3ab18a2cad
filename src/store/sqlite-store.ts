import { resolve } from 'node:path';
import { LRUCache } from 'lru-cache';
import {
  formatDestination,
  parseDestination,
  type Attachment,
  type CommandButton,
  type Delivery,
  type DeliveryRecord,
  type DeliveryStatus,
  type Destination,
} from '../session/delivery.js';
import { messageOf } from '../errors.js';
import { sessionIdOfKey, type RoutingSnapshot } from '../session/index.js';
import type { HistoryRow } from './sqlite-history.js';
import type { DeliveryRow, DeliveryStateRow, EncodedDelivery } from './sqlite-outbox.js';
import type { OverdueParameters } from './sqlite-overdue-filters.js';
import type { ProcessRow, UnreportedProcessRow } from './sqlite-processes.js';
import type { Retention } from './retention.js';
import type { ScheduleRow } from './sqlite-schedules.js';
import { SqliteConnection } from './sqlite-connection.js';
import {
  MAX_STATE_IDS,
  type CallResults,
  type Conversations,
  type DeliveryState,
  type HistoryEntry,
  type HistoryLog,
  type HomeChannels,
  type MessageLog,
  type NewDelivery,
  type OutboxStore,
  type OverdueQuery,
  type ProcessRecord,
  type ProcessState,
  type ProcessTable,
  type ScheduleRecord,
  type ScheduleState,
  type ScheduleTable,
  type Store,
  type SyncTokens,
  type UnreportedProcess,
} from './store.js';

/** Conversation epochs kept in memory; a miss costs one read. */
export const EPOCH_CACHE_SIZE = 100_000;
const DAY_MS = 24 * 3600_000;
/** Done deliveries are kept a day, so a turn replayed that late still finds its replies sent. */
export const DONE_RETENTION_MS = DAY_MS;
const DEFAULT_RETENTION: Retention = { doneMs: DONE_RETENTION_MS, failedMs: 7 * DAY_MS };

/**
 * The embedded store: one SQLite file in WAL mode with synchronous=NORMAL, which keeps
 * every committed write through a process crash (kill -9); only an OS crash can lose the
 * last transactions. The connection (SqliteConnection) commits each event-loop turn's
 * statements together. Completed messages are deleted; done
 * deliveries are kept for `retention.doneMs` (a day) so a replayed turn finds their ids,
 * failed ones for `retention.failedMs` (a week) as dead letters, then pruned in batches.
 * The tools' tables are bounded by caps (processes, schedules) and by count and age (history).
 */
export class SqliteStore implements Store {
  readonly messages: MessageLog;
  readonly outbox: OutboxStore;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;
  readonly processes: ProcessTable;
  readonly schedules: ScheduleTable;
  readonly history: HistoryLog;
  readonly calls: CallResults;
  readonly syncTokens: SyncTokens;

  private constructor(
    private readonly thread: SqliteConnection,
    readonly location: string,
  ) {
    this.messages = messageLog(thread);
    this.outbox = outbox(thread);
    this.homes = homeChannels(thread);
    this.conversations = conversations(thread);
    this.processes = processTable(thread);
    this.schedules = scheduleTable(thread);
    this.history = historyLog(thread);
    this.calls = callResults(thread);
    this.syncTokens = syncTokens(thread);
  }

  /** Opens the store, creating it and its directory if needed; TL_STORE_FAILED says why it cannot. */
  static async open(path: string, retention: Retention = DEFAULT_RETENTION): Promise<SqliteStore> {
    return new SqliteStore(SqliteConnection.open(path, retention), resolve(path));
  }

  /**
   * Opens an existing store to read it, as the forensics commands do, even while a gateway
   * runs on it or from a read-only copy: its schema is neither created nor moved (another
   * version's store is refused), reads take no write lock, and every write is refused with
   * TL_STORE_FAILED. TL_STORE_FAILED also says why it cannot be opened.
   */
  static async openReadOnly(path: string): Promise<SqliteStore> {
    return new SqliteStore(SqliteConnection.openReadOnly(path, DEFAULT_RETENTION), resolve(path));
  }

  probeWrite(): Promise<void> {
    return this.thread.call('probeWrite');
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}

/**
 * A snapshot is stored with its message and again with each of its deliveries: encode each
 * once. Only frozen ones (captureRouting's) are remembered, so a changed snapshot is never
 * stored with its old encoding.
 */
const encoded = new WeakMap<RoutingSnapshot, string>();
function encodeRouting(routing: RoutingSnapshot): string {
  let json = encoded.get(routing);
  if (json === undefined) {
    json = JSON.stringify(routing);
    if (Object.isFrozen(routing) && Object.isFrozen(routing.session)) encoded.set(routing, json);
  }
  return json;
}

function messageLog(thread: SqliteConnection): MessageLog {
  return {
    accept: (message, checks) =>
      thread.call('acceptMessage', message.id, encodeRouting(message.routing), message.text, message.receivedAt, {
        destination: formatDestination(checks.destination),
        maxOpenPerDestination: checks.maxOpenPerDestination,
        maxOpenTotal: checks.maxOpenTotal,
        ...(checks.idempotency === undefined
          ? {}
          : { idempotencyKey: checks.idempotency.key, answer: checks.idempotency.answer, keyExpiresAt: checks.idempotency.expiresAt }),
      }),
    // Bookkeeping after the turn: it rides with the next message's commit.
    complete: (id) => thread.callLazily('completeMessage', id),
    pending: async () =>
      (await thread.call('pendingMessages')).map((row) => ({
        id: row.id,
        routing: JSON.parse(row.routing) as RoutingSnapshot,
        text: row.text,
        receivedAt: row.received_at,
      })),
  };
}

/** A new delivery as its row's columns hold it. */
function encodeDelivery(delivery: NewDelivery): EncodedDelivery {
  return {
    id: delivery.id,
    kind: delivery.kind,
    destination: formatDestination(delivery.destination),
    text: delivery.text,
    inReplyTo: delivery.inReplyTo ?? null,
    origin: encodeRouting(delivery.origin),
    createdAt: delivery.createdAt,
    attachment: delivery.attachment === undefined ? null : JSON.stringify(delivery.attachment),
    replaces: delivery.replaces ?? null,
    button: delivery.button === undefined ? null : JSON.stringify(delivery.button),
  };
}

function outbox(thread: SqliteConnection): OutboxStore {
  return {
    add: (delivery, leaseUntil) => thread.call('addDelivery', encodeDelivery(delivery), leaseUntil),
    claim: async (now, limit, leaseUntil) => {
      const { rows, nextAt } = await thread.call('claim', now, limit, leaseUntil);
      const deliveries: Delivery[] = [];
      for (const row of rows) {
        try {
          deliveries.push(toRecord(row));
        } catch (error) {
          // One unreadable row must not hold back the others claimed with it, pass after pass.
          await thread.call('markFailed', row.id, `unreadable in the store: ${messageOf(error)}`, now, leaseUntil);
        }
      }
      return { deliveries, nextAt };
    },
    // Sent already: its record rides with the next message's commit.
    markDone: (id, leaseUntil) => thread.callLazily('markDone', id, Date.now(), leaseUntil),
    retryAt: (id, dueAt, error, leaseUntil) => thread.call('retryAt', id, dueAt, error, leaseUntil),
    markFailed: (id, error, leaseUntil) => thread.call('markFailed', id, error, Date.now(), leaseUntil),
    addRefused: (delivery, error) => thread.call('addRefusedDelivery', encodeDelivery(delivery), error),
    releaseLeases: (now) => thread.call('releaseLeases', now),
    retryFailed: (id) => thread.call('retryFailed', id ?? null, Date.now()),
    list: async ({ failedOnly = false, chatId, limit }) => {
      const rows = await thread.call('listDeliveries', failedOnly, chatId === undefined ? '' : encodeURIComponent(chatId), limit);
      return rows.map(toRecord);
    },
    pressure: (maxOpenPerDestination) => thread.call('pressure', maxOpenPerDestination),
    overdue: async (query) => (await thread.call('overdueDeliveries', overdueParameters(query))).map(toDeliveryState),
    states: async (ids) => {
      const unique = [...new Set(ids)];
      const chunks: Promise<{ id: string; status: string }[]>[] = [];
      // Asked in one turn: the chunks are read in one transaction, so they agree.
      for (let i = 0; i < unique.length; i += MAX_STATE_IDS) chunks.push(thread.call('deliveryStates', JSON.stringify(unique.slice(i, i + MAX_STATE_IDS))));
      const states = new Map<string, DeliveryStatus>();
      for (const rows of await Promise.all(chunks)) for (const row of rows) states.set(row.id, row.status as DeliveryStatus);
      return states;
    },
  };
}

/** A query's named parameters: ids plain for routing snapshots, encoded for destinations. */
function overdueParameters(query: OverdueQuery): OverdueParameters {
  const { chatId, threadId } = query;
  return {
    before: query.before,
    limit: atLeastZero(query.limit),
    filtered: chatId === undefined && threadId === undefined ? 0 : 1,
    chat_id: chatId ?? null,
    thread_id: threadId ?? null,
    chat: chatId === undefined ? null : encodeURIComponent(chatId),
    thread: threadId === undefined ? null : encodeURIComponent(threadId),
  };
}

function toDeliveryState(row: DeliveryStateRow): DeliveryState {
  return {
    id: row.id,
    kind: row.kind as DeliveryState['kind'],
    status: row.status as DeliveryState['status'],
    destination: row.destination,
    origin: parseRouting(row.origin),
    attempts: row.attempts,
    attemptsSince: row.attempts_since,
    dueAt: row.due_at,
    ...(row.lease_until === null ? {} : { leaseUntil: row.lease_until }),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
    ...(row.finished_at === null ? {} : { finishedAt: row.finished_at }),
  };
}

/** A stored snapshot, or undefined when it is not a JSON object: a forensic read reports what it can of a damaged row. */
function parseRouting(json: string): RoutingSnapshot | undefined {
  try {
    const snapshot: unknown = JSON.parse(json);
    return typeof snapshot === 'object' && snapshot !== null ? (snapshot as RoutingSnapshot) : undefined;
  } catch {
    return undefined;
  }
}

/** A stored destination, or undefined when it does not parse (see parseRouting). */
function parseStoredDestination(text: string): Destination | undefined {
  try {
    return parseDestination(text);
  } catch {
    return undefined;
  }
}

function toRecord(row: DeliveryRow): DeliveryRecord {
  const delivery: Delivery = {
    id: row.id,
    kind: row.kind as Delivery['kind'],
    destination: parseDestination(row.destination),
    text: row.text,
    ...(row.in_reply_to === null ? {} : { inReplyTo: row.in_reply_to }),
    ...(row.attachment === null ? {} : { attachment: JSON.parse(row.attachment) as Attachment }),
    ...(row.replaces === null || row.replaces === undefined ? {} : { replaces: row.replaces }),
    ...(row.button === null || row.button === undefined ? {} : { button: JSON.parse(row.button) as CommandButton }),
    origin: JSON.parse(row.origin) as RoutingSnapshot,
    attempts: row.attempts,
    createdAt: row.created_at,
    attemptsSince: row.attempts_since,
  };
  return {
    ...delivery,
    status: row.status as DeliveryRecord['status'],
    dueAt: row.due_at,
    ...(row.lease_until === null ? {} : { leaseUntil: row.lease_until }),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
    ...(row.finished_at === null ? {} : { finishedAt: row.finished_at }),
  };
}

function homeChannels(thread: SqliteConnection): HomeChannels {
  return {
    get: async (platform) => {
      const json = await thread.call('getHome', platform);
      if (json === undefined) return undefined;
      // Stores of earlier versions kept a home as JSON.
      return json.startsWith('{') ? (JSON.parse(json) as Destination) : parseDestination(json);
    },
    set: (destination) => thread.call('setHome', destination.platform, formatDestination(destination)),
  };
}

function syncTokens(thread: SqliteConnection): SyncTokens {
  return {
    get: (stream) => thread.call('getSyncToken', stream),
    advance: (stream, previous, token) => thread.call('advanceSyncToken', stream, previous ?? null, token),
  };
}

function conversations(thread: SqliteConnection): Conversations {
  // Every message asks for its conversation's epoch, and this process is the store's only
  // writer, so known epochs are answered from memory without waiting for a commit. A read
  // under way is shared too: a later message of a cold conversation must not overtake an
  // earlier one still waiting for the same read. Bounded: the least recently used entries
  // are forgotten and read again when needed; a failed read is forgotten at once.
  // Keyed by the key's hash (its epoch-0 session id): a key can be a kilobyte of
  // percent-encoded ids, and this cache holds one entry for each recent conversation.
  const known = new LRUCache<string, Promise<number>>({ max: EPOCH_CACHE_SIZE });
  const remember = (id: string, epoch: Promise<number>): Promise<number> => {
    known.set(id, epoch);
    epoch.catch(() => {
      if (known.peek(id) === epoch) known.delete(id);
    });
    return epoch;
  };
  return {
    epoch: (key) => {
      const id = sessionIdOfKey(key);
      return known.get(id) ?? remember(id, thread.call('epoch', key));
    },
    next: (key) => remember(sessionIdOfKey(key), thread.call('nextEpoch', key)),
  };
}

function processTable(thread: SqliteConnection): ProcessTable {
  return {
    add: (record, caps) => thread.call('addProcess', toProcessRow(record), caps),
    get: async (id) => {
      const row = await thread.call('getProcess', id);
      return row === undefined ? undefined : toProcessRecord(row);
    },
    all: async () => (await thread.call('allProcesses')).map(toProcessRecord),
    ofDestination: async (destination) => (await thread.call('processesOf', formatDestination(destination))).map(toProcessRecord),
    ended: (id, exit) => thread.call('processEnded', id, exit.endedAt, exit.code ?? null, exit.signal ?? null, exit.note ?? null),
    progressed: (id, progressSent) => thread.call('processProgressed', id, progressSent),
    remove: (id) => thread.call('removeProcess', id),
    unreported: async (query) => (await thread.call('unreportedProcesses', overdueParameters(query))).map(toUnreportedProcess),
  };
}

function toUnreportedProcess(row: UnreportedProcessRow): UnreportedProcess {
  const record = toProcessState(row) as UnreportedProcess['record'];
  if (row.notice_status === null) return { record };
  const notice = toDeliveryState({
    id: `proc:${row.id}:done`,
    kind: row.notice_kind!,
    status: row.notice_status,
    destination: row.notice_destination!,
    origin: row.notice_origin!,
    attempts: row.notice_attempts!,
    attempts_since: row.notice_attempts_since!,
    due_at: row.notice_due_at!,
    lease_until: row.notice_lease_until,
    last_error: row.notice_last_error,
    finished_at: row.notice_finished_at,
  });
  return { record, notice };
}

function toProcessRow(record: ProcessRecord): ProcessRow {
  return {
    id: record.id,
    origin: encodeRouting(record.origin),
    destination: formatDestination(record.destination),
    command: record.command,
    pid: record.pid,
    started_at: record.startedAt,
    notify_on_complete: record.notifyOnComplete ? 1 : 0,
    check_interval_ms: record.checkIntervalMs ?? null,
    progress_sent: record.progressSent,
    ended_at: record.exit?.endedAt ?? null,
    exit_code: record.exit?.code ?? null,
    exit_signal: record.exit?.signal ?? null,
    exit_note: record.exit?.note ?? null,
  };
}

/** The gateway's own read: a row that does not parse throws, as its callers expect. */
function toProcessRecord(row: ProcessRow): ProcessRecord {
  return { ...toProcessState(row), origin: JSON.parse(row.origin) as RoutingSnapshot, destination: parseDestination(row.destination) };
}

/** The forensic read: what can be read of a damaged row (parseRouting). */
function toProcessState(row: ProcessRow): ProcessState {
  return {
    id: row.id,
    origin: parseRouting(row.origin),
    destination: parseStoredDestination(row.destination),
    command: row.command,
    pid: row.pid,
    startedAt: row.started_at,
    notifyOnComplete: row.notify_on_complete === 1,
    ...(row.check_interval_ms === null ? {} : { checkIntervalMs: row.check_interval_ms }),
    progressSent: row.progress_sent,
    ...(row.ended_at === null
      ? {}
      : {
          exit: {
            endedAt: row.ended_at,
            ...(row.exit_code === null ? {} : { code: row.exit_code }),
            ...(row.exit_signal === null ? {} : { signal: row.exit_signal }),
            ...(row.exit_note === null ? {} : { note: row.exit_note }),
          },
        }),
  };
}

function scheduleTable(thread: SqliteConnection): ScheduleTable {
  return {
    add: (record, caps) => thread.call('addSchedule', toScheduleRow(record), caps),
    due: async (now, limit) => (await thread.call('dueSchedules', now, atLeastZero(limit))).map(toScheduleRecord),
    nextAt: () => thread.call('nextScheduleAt'),
    all: async () => (await thread.call('allSchedules')).map(toScheduleRecord),
    ofDestination: async (destination) => (await thread.call('schedulesOf', formatDestination(destination))).map(toScheduleRecord),
    get: async (id) => {
      const row = await thread.call('getSchedule', id);
      return row === undefined ? undefined : toScheduleRecord(row);
    },
    advance: (id, ranAt, nextAt) => thread.call('advanceSchedule', id, ranAt, nextAt ?? null),
    remove: (id) => thread.call('removeSchedule', id),
    overdue: async (query) => (await thread.call('overdueSchedules', overdueParameters(query))).map(toScheduleState),
  };
}

function toScheduleRow(record: ScheduleRecord): ScheduleRow {
  return {
    id: record.id,
    origin: encodeRouting(record.origin),
    destination: formatDestination(record.destination),
    target: record.target,
    text: record.text,
    cron: record.cron ?? null,
    timezone: record.timezone ?? null,
    next_at: record.nextAt,
    created_at: record.createdAt,
  };
}

/** The gateway's own read: a row that does not parse throws, as its callers expect. */
function toScheduleRecord(row: ScheduleRow): ScheduleRecord {
  return { ...toScheduleState(row), origin: JSON.parse(row.origin) as RoutingSnapshot, destination: parseDestination(row.destination) };
}

/** The forensic read: what can be read of a damaged row (parseRouting). */
function toScheduleState(row: ScheduleRow): ScheduleState {
  return {
    id: row.id,
    origin: parseRouting(row.origin),
    destination: parseStoredDestination(row.destination),
    target: row.target,
    text: row.text,
    ...(row.cron === null ? {} : { cron: row.cron }),
    ...(row.timezone === null ? {} : { timezone: row.timezone }),
    nextAt: row.next_at,
    createdAt: row.created_at,
  };
}

function callResults(thread: SqliteConnection): CallResults {
  return {
    get: (messageId, key) => thread.call('recordedCall', key, messageId),
    record: (messageId, key, result) => thread.call('recordCall', key, messageId, result),
  };
}

function historyLog(thread: SqliteConnection): HistoryLog {
  return {
    append: (sessionId, destination, entries, keep) =>
      thread.call('appendHistory', sessionId, formatDestination(destination), entries.map(toHistoryRow), atLeastZero(keep)),
    mirror: (destination, entry, keep) => thread.call('mirrorHistory', formatDestination(destination), toHistoryRow(entry), atLeastZero(keep)),
    recent: async (sessionId, destination, limit) =>
      (await thread.call('recentHistory', sessionId, formatDestination(destination), atLeastZero(limit))).map(toHistoryEntry),
  };
}

function toHistoryRow(entry: HistoryEntry): HistoryRow {
  return { role: entry.role, text: entry.text, source: entry.source ?? null, extra: entry.extra ?? null, at: entry.at };
}

function toHistoryEntry(row: HistoryRow): HistoryEntry {
  return {
    role: row.role as HistoryEntry['role'],
    text: row.text,
    ...(row.source === null ? {} : { source: row.source }),
    ...(row.extra === null ? {} : { extra: row.extra }),
    at: row.at,
  };
}

/** SQLite reads a negative LIMIT as "no limit": a count from a caller never means that. */
function atLeastZero(count: number): number {
  return Math.max(0, Math.floor(count));
}
