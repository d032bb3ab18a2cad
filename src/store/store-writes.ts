import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../errors.js';
import type { AnyStore, CallResults, Conversations, HistoryLog, HomeChannels, MessageLog, OutboxStore, ProcessTable, ScheduleTable, SyncTokens } from './store.js';

type Kind = 'read' | 'write';

/**
 * Every method of every table, read or write: a method added to a table's interface fails the
 * typecheck here until it is classified, so no write goes unwatched. The embedded outbox's
 * methods are listed; the distributed one has a subset of them.
 */
export const STORE_METHODS = {
  messages: { accept: 'write', complete: 'write', pending: 'read' },
  outbox: {
    add: 'write',
    retryFailed: 'write',
    list: 'read',
    pressure: 'read',
    overdue: 'read',
    states: 'read',
    claim: 'write',
    markDone: 'write',
    addRefused: 'write',
    retryAt: 'write',
    markFailed: 'write',
    releaseLeases: 'write',
  },
  homes: { get: 'read', set: 'write' },
  conversations: { epoch: 'read', next: 'write' },
  processes: { add: 'write', get: 'read', all: 'read', ofDestination: 'read', ended: 'write', progressed: 'write', remove: 'write', unreported: 'read' },
  schedules: { add: 'write', due: 'read', nextAt: 'read', all: 'read', ofDestination: 'read', get: 'read', advance: 'write', remove: 'write', overdue: 'read' },
  history: { append: 'write', mirror: 'write', recent: 'read' },
  calls: { get: 'read', record: 'write' },
  syncTokens: { get: 'read', advance: 'write' },
} as const satisfies {
  messages: Record<keyof MessageLog, Kind>;
  outbox: Record<keyof OutboxStore, Kind>;
  homes: Record<keyof HomeChannels, Kind>;
  conversations: Record<keyof Conversations, Kind>;
  processes: Record<keyof ProcessTable, Kind>;
  schedules: Record<keyof ScheduleTable, Kind>;
  history: Record<keyof HistoryLog, Kind>;
  calls: Record<keyof CallResults, Kind>;
  syncTokens: Record<keyof SyncTokens, Kind>;
};

export type StoreTable = keyof typeof STORE_METHODS;

/** What a store that cannot write answers with: the embedded one's, or Redis refusing a command. */
const STORE_DOWN: ReadonlySet<string> = new Set(['TL_STORE_FAILED', 'TL_REDIS_UNAVAILABLE']);

/**
 * Whether the store takes writes, from the writes themselves: a full disk fails every write
 * while reads (and so the probes' own query) still succeed. From the first write that fails
 * until one succeeds (probeWrite(), which readiness makes meanwhile, included), `failure()`
 * says why and /v1/ready answers 503. The change is logged each way, with where the store is:
 * the error a caller gets leaves the path out, since it may reach an HTTP answer.
 */
export class StoreWrites {
  private failed: ThreadlineError | undefined;
  private readonly wrapped = new WeakSet<AnyStore>();

  constructor(private readonly logger: Logger) {}

  /** Why writes fail now; undefined while they succeed. */
  failure(): ThreadlineError | undefined {
    return this.failed;
  }

  /** `store` with each write's outcome reported here; a store this watch returned is returned as it is. */
  watched(store: AnyStore): AnyStore {
    if (this.wrapped.has(store)) return store;
    const table = <T extends StoreTable>(name: T): AnyStore[T] => this.table(name, store[name], store.location);
    const watched: AnyStore = {
      messages: table('messages'),
      outbox: table('outbox'),
      homes: table('homes'),
      conversations: table('conversations'),
      processes: table('processes'),
      schedules: table('schedules'),
      history: table('history'),
      calls: table('calls'),
      syncTokens: table('syncTokens'),
      location: store.location,
      probeWrite: () => this.observe(store.probeWrite(), store.location),
      close: () => store.close(),
    };
    this.wrapped.add(watched);
    return watched;
  }

  private table<T extends StoreTable>(name: T, target: AnyStore[T], location: string): AnyStore[T] {
    const kinds = STORE_METHODS[name] as Record<string, Kind>;
    return new Proxy(target, {
      get: (object, property, receiver) => {
        const value: unknown = Reflect.get(object, property, receiver);
        if (typeof value !== 'function' || typeof property !== 'string' || kinds[property] !== 'write') return value;
        return (...args: unknown[]) => this.observe((value as (...args: unknown[]) => Promise<unknown>).apply(object, args), location);
      },
    });
  }

  /** `write`, its outcome recorded; `location` names the store in the log line of a change. */
  private observe<T>(write: Promise<T>, location: string): Promise<T> {
    return write.then(
      (result) => {
        this.succeeded(location);
        return result;
      },
      (error: unknown) => {
        if (error instanceof ThreadlineError && STORE_DOWN.has(error.code)) this.failedWith(error, location);
        throw error;
      },
    );
  }

  private failedWith(error: ThreadlineError, location: string): void {
    if (this.failed === undefined) {
      this.logger.error({ err: messageOf(error), code: error.code, store: location }, 'the store refused a write: /v1/ready answers 503 until a write succeeds');
    }
    this.failed = error;
  }

  private succeeded(location: string): void {
    if (this.failed === undefined) return;
    this.failed = undefined;
    this.logger.warn({ store: location }, 'the store takes writes again: /v1/ready answers 200');
  }
}
