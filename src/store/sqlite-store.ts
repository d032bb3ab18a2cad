import type { RoutingSnapshot } from '../session/index.js';
import type { DeliveryRow } from './sqlite-operations.js';
import { SqliteThread } from './sqlite-thread.js';
import type { Conversations, Destination, HomeChannels, MessageLog, Outbox, Store, StoredDelivery } from './store.js';

/** Conversation epochs kept in memory; a miss costs one read. */
const EPOCH_CACHE_SIZE = 100_000;
const DAY_MS = 24 * 3600_000;

/**
 * The embedded store: one SQLite file in WAL mode with synchronous=NORMAL, which keeps
 * every committed write through a process crash (kill -9); only an OS crash can lose the
 * last transactions. The connection lives on a thread of its own (SqliteThread), where
 * each event-loop turn's statements commit together. Completed messages are deleted;
 * completed deliveries are kept for `retentionMs` (a day) so a replayed turn finds their
 * ids, then pruned in bounded batches.
 */
export class SqliteStore implements Store {
  readonly messages: MessageLog;
  readonly outbox: Outbox;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;

  private constructor(private readonly thread: SqliteThread) {
    this.messages = messageLog(thread);
    this.outbox = outbox(thread);
    this.homes = homeChannels(thread);
    this.conversations = conversations(thread);
  }

  /** Opens the store, creating it and its directory if needed; TL_STORE_FAILED says why it cannot. */
  static async open(path: string, retentionMs = DAY_MS): Promise<SqliteStore> {
    return new SqliteStore(await SqliteThread.start(path, retentionMs));
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

function messageLog(thread: SqliteThread): MessageLog {
  return {
    append: (message) => thread.call('appendMessage', message.id, encodeRouting(message.routing), message.text, message.receivedAt),
    complete: (id) => thread.call('completeMessage', id),
    pending: async () =>
      (await thread.call('pendingMessages')).map((row) => ({
        id: row.id,
        routing: JSON.parse(row.routing) as RoutingSnapshot,
        text: row.text,
        receivedAt: row.received_at,
      })),
  };
}

function outbox(thread: SqliteThread): Outbox {
  return {
    add: (delivery, dueAt) =>
      thread.call(
        'addDelivery',
        delivery.id,
        delivery.kind,
        encodeDestination(delivery.destination),
        delivery.text,
        delivery.inReplyTo ?? null,
        encodeRouting(delivery.origin),
        dueAt,
        delivery.createdAt,
      ),
    markDone: (id) => thread.call('markDone', id, Date.now()),
    lease: (id, until) => thread.call('lease', id, until),
    releaseLeases: (now) => thread.call('releaseLeases', now),
    retryAt: (id, dueAt, error) => thread.call('retryAt', id, dueAt, error),
    markFailed: (id, error) => thread.call('markFailed', id, error),
    due: async (now, limit, skip) => (await thread.call('due', now, limit, [...skip])).map(toDelivery),
    nextDueAt: () => thread.call('nextDueAt'),
    pendingByDestination: async () =>
      (await thread.call('pendingByDestination')).map((row) => ({ destination: JSON.parse(row.destination) as Destination, count: row.n })),
    pendingCount: () => thread.call('pendingCount'),
  };
}

/** One spelling per destination: the store orders deliveries by equal destination text. */
function encodeDestination(destination: Destination): string {
  const { platform, chatId, threadId } = destination;
  return JSON.stringify(threadId === undefined ? { platform, chatId } : { platform, chatId, threadId });
}

function toDelivery(row: DeliveryRow): StoredDelivery {
  return {
    id: row.id,
    kind: row.kind as StoredDelivery['kind'],
    destination: JSON.parse(row.destination) as Destination,
    text: row.text,
    ...(row.in_reply_to === null ? {} : { inReplyTo: row.in_reply_to }),
    origin: JSON.parse(row.origin) as RoutingSnapshot,
    attempts: row.attempts,
    createdAt: row.created_at,
  };
}

function homeChannels(thread: SqliteThread): HomeChannels {
  return {
    get: async (platform) => {
      const json = await thread.call('getHome', platform);
      return json === undefined ? undefined : (JSON.parse(json) as Destination);
    },
    set: (destination) => thread.call('setHome', destination.platform, JSON.stringify(destination)),
  };
}

function conversations(thread: SqliteThread): Conversations {
  // Every message asks for its conversation's epoch, and this process is the store's only
  // writer, so known epochs are answered from memory without waiting for a commit. A read
  // under way is shared too: a later message of a cold conversation must not overtake an
  // earlier one still waiting for the same read. Bounded: the oldest entries are forgotten
  // and read again when needed; a failed read is forgotten at once.
  const known = new Map<string, Promise<number>>();
  const remember = (key: string, epoch: Promise<number>): Promise<number> => {
    known.delete(key);
    known.set(key, epoch);
    if (known.size > EPOCH_CACHE_SIZE) known.delete(known.keys().next().value!);
    epoch.catch(() => {
      if (known.get(key) === epoch) known.delete(key);
    });
    return epoch;
  };
  return {
    epoch: (key) => known.get(key) ?? remember(key, thread.call('epoch', key)),
    next: (key) => remember(key, thread.call('nextEpoch', key)),
  };
}
