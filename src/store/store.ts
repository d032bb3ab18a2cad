import type { Delivery, DeliveryKind, DeliveryRecord, DeliveryStatus, Destination } from '../session/delivery.js';
import type { RoutingSnapshot } from '../session/index.js';

/**
 * The persistence seam. Everything is async so that a networked backend (Redis, in the
 * distributed mode) can implement it; the embedded SQLite store answers on its own thread.
 */
export interface Store<O extends OutboxRecords = OutboxStore> {
  readonly messages: MessageLog;
  /** The embedded store's outbox also leases rows to its sender; the distributed one's queue workers send. */
  readonly outbox: O;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;
  /** Background commands of the terminal tool, kept so their watchers outlive a restart. */
  readonly processes: ProcessTable;
  /** Reminders and cron jobs. */
  readonly schedules: ScheduleTable;
  /** Each session's conversation with the model, and text mirrored into it by send_message. */
  readonly history: HistoryLog;
  /** What a turn's tool calls returned, kept until their message completes, so its replay is answered with it. */
  readonly calls: CallResults;
  /** Where it is, for log lines only (an error a caller sees never names it): the SQLite file, or Redis and the keys' prefix. */
  readonly location: string;
  /**
   * Makes a write that changes nothing and fails as any write would (a full disk, a Redis out
   * of memory): once a write failed, readiness asks it whether writes succeed again.
   */
  probeWrite(): Promise<void>;
  /** Where a platform's event stream was read up to (Matrix's `/sync` token). */
  readonly syncTokens: SyncTokens;
  close(): Promise<void>;
}

/** An accepted inbound message, kept until its turn has run, so a crash loses nothing. */
export interface StoredMessage {
  readonly id: string;
  /** The routing and the gateway.message span it was accepted under. */
  readonly routing: RoutingSnapshot;
  readonly text: string;
  readonly receivedAt: number;
}

/** What is checked in the same transaction that appends a message. */
export interface AcceptChecks {
  /** The destination the message's replies go to; its open deliveries are capped. */
  readonly destination: Destination;
  readonly maxOpenPerDestination: number;
  readonly maxOpenTotal: number;
  /** The platform's id for the message, remembered with `answer` until `keyExpiresAt`. */
  readonly idempotency?: { readonly key: string; readonly answer: string; readonly expiresAt: number };
  /**
   * Messages accepted and not completed, across every instance, before intake refuses
   * (`full`, scope `messages`). The distributed store checks it; the embedded gateway bounds
   * its queue in process and leaves it unset.
   */
  readonly maxPendingMessages?: number;
}

export type AcceptOutcome =
  | { readonly status: 'accepted' }
  /**
   * The key was seen: nothing appended; `answer` is what the first message was answered.
   * `waiting`: the first message, when it has not run yet and its hand-over to the turns may
   * have failed (the distributed store); the caller hands it over again, which is harmless
   * when it is queued already.
   */
  | { readonly status: 'duplicate'; readonly answer: string; readonly waiting?: StoredMessage }
  /** Nothing appended: the destination's, or every destination's, open deliveries are at their cap. */
  | { readonly status: 'full'; readonly scope: 'destination' | 'total'; readonly open: number }
  /** Nothing appended: `pending` messages wait for their turn, at maxPendingMessages. */
  | { readonly status: 'full'; readonly scope: 'messages'; readonly open: number };

export interface MessageLog {
  /** Appends the message unless a check refuses it, atomically with the checks. */
  accept(message: StoredMessage, checks: AcceptChecks): Promise<AcceptOutcome>;
  complete(id: string): Promise<void>;
  /** Messages accepted but not completed, oldest first: what a restart must run again. */
  pending(): Promise<StoredMessage[]>;
}

/** A delivery before it has been attempted. */
export type NewDelivery = Omit<Delivery, 'attempts' | 'attemptsSince'>;

/**
 * `claimed`: first of its destination, recorded as being sent: send it now. `queued`: behind
 * others of its destination; the outbox sends it in turn. `exists`: the id was recorded before
 * (a replayed turn), nothing changed.
 */
export type AddOutcome = 'claimed' | 'queued' | 'exists';

export interface OutboxPressure {
  /** Open (pending or sending) deliveries in all. */
  readonly open: number;
  /** Destinations whose open deliveries are at the per-destination cap. */
  readonly fullDestinations: number;
  /** When the current series of attempts of the oldest open delivery began (ms since the epoch); undefined when none is open. */
  readonly oldestOpenSince?: number | undefined;
}

/** A store of either kind: what everything but the embedded outbox's sender needs. */
export type AnyStore = Store<OutboxRecords>;

/**
 * What is asked of an outbox's records whoever sends them: recording, inspection, retrying
 * dead letters and back-pressure. The embedded store and the distributed queues both answer it.
 */
export interface OutboxRecords {
  /** `leaseUntil`: how long a `claimed` delivery is the caller's to send (embedded store only). */
  add(delivery: NewDelivery, leaseUntil: number): Promise<AddOutcome>;
  /** Failed deliveries (one by id, or all) made pending again with a fresh series of attempts; how many. */
  retryFailed(id: string | undefined): Promise<number>;
  /** The newest deliveries, failed ones only if asked, of one chat if asked. */
  list(filter: { readonly failedOnly?: boolean; readonly chatId?: string; readonly limit: number }): Promise<DeliveryRecord[]>;
  pressure(maxOpenPerDestination: number): Promise<OutboxPressure>;
  /**
   * Deliveries not done (pending, being sent, or failed) whose current series of attempts began
   * before `query.before`, that series' start newest first. The completion notice of a process
   * still in the process table is left out: ProcessTable.unreported reports it with its process.
   */
  overdue(query: OverdueQuery): Promise<DeliveryState[]>;
  /**
   * The status of each of `ids` the outbox holds (an id it does not hold is not in the map):
   * what became of deliveries the traces name. Read MAX_STATE_IDS at a time.
   */
  states(ids: readonly string[]): Promise<Map<string, DeliveryStatus>>;
}

/**
 * The embedded outbox's state, owned by the store alone: each destination's deliveries form a
 * queue whose head is the only one that may be sent, so a chat keeps its order.
 */
export interface OutboxStore extends OutboxRecords {
  /**
   * Atomically marks as being sent (until `leaseUntil`) up to `limit` heads that need it by
   * `now`: pending ones that are due, and ones whose lease ended. Also says when the next
   * head will need attention, for the outbox's timer. A claimed row that cannot be read back
   * (a destination that does not parse) is given up instead of returned.
   */
  claim(now: number, limit: number, leaseUntil: number): Promise<{ deliveries: Delivery[]; nextAt: number | undefined }>;
  /**
   * The platform accepted it. True when the next delivery of its destination is now its head.
   * Each outcome names the lease it was sent under: a sender whose lease ended and whose
   * delivery was claimed again changes nothing.
   */
  markDone(id: string, leaseUntil: number): Promise<boolean>;
  /** Records a delivery that must not be sent as failed (a dead letter) with `error`; false when its id was recorded before. */
  addRefused(delivery: NewDelivery, error: string): Promise<boolean>;
  /** Counts the attempt and makes it pending again, due at `dueAt`; it stays its destination's head. */
  retryAt(id: string, dueAt: number, error: string, leaseUntil: number): Promise<void>;
  /** Gives up: kept as a dead letter with its last error. True as for markDone. */
  markFailed(id: string, error: string, leaseUntil: number): Promise<boolean>;
  /** At start-up, under the data dir's lock: deliveries being sent by an earlier process are due now. */
  releaseLeases(now: number): Promise<void>;
}

/** Ids a single read of OutboxStore.states looks up; more are read in chunks of this many. */
export const MAX_STATE_IDS = 1_000;

/**
 * What the forensics commands ask of the store: work due before `before`, newest first, at most
 * `limit`; of one chat (and thread) if asked, matched against where the work goes and where it came from.
 */
export interface OverdueQuery {
  /** ms since the epoch: only what was due strictly before it. */
  readonly before: number;
  readonly limit: number;
  /** Plain ids, as the chat's platform spells them. */
  readonly chatId?: string | undefined;
  readonly threadId?: string | undefined;
}

/** A delivery as the forensics commands read it: its state and routing, without its text or attachment. */
export interface DeliveryState {
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly status: DeliveryStatus;
  /** As stored (formatDestination's spelling); it may not parse: such a delivery was given up as unreadable. */
  readonly destination: string;
  /** Undefined when the stored snapshot is not JSON. */
  readonly origin: RoutingSnapshot | undefined;
  readonly attempts: number;
  /** When its current series of attempts began: when it was due. */
  readonly attemptsSince: number;
  /** When its next attempt is due (pending) or was last due. */
  readonly dueAt: number;
  readonly leaseUntil?: number;
  readonly lastError?: string;
  readonly finishedAt?: number;
}

/** The per-platform home channel set by /sethome; target of `home` deliveries. */
export interface HomeChannels {
  get(platform: string): Promise<Destination | undefined>;
  set(destination: Destination): Promise<void>;
}

/**
 * Where each platform event stream that is read by position (Matrix's `/sync` `next_batch`) was
 * read up to, by stream name: advanced only once what was read before it is accepted, so a
 * restart reads on from there, neither losing nor repeating events. Compare-and-set: a reader
 * that lost the stream to another instance cannot move it back.
 */
export interface SyncTokens {
  /** The stored token of `stream`; undefined when none was stored yet. */
  get(stream: string): Promise<string | undefined>;
  /**
   * Stores `token` for `stream` when the stored one is still `previous` (undefined: none stored
   * yet) and answers true; otherwise changes nothing and answers false.
   */
  advance(stream: string, previous: string | undefined, token: string): Promise<boolean>;
}

/**
 * Conversation epochs: /new starts a new conversation in the same chat by bumping the
 * epoch, which is part of the session id.
 */
export interface Conversations {
  epoch(key: string): Promise<number>;
  next(key: string): Promise<number>;
}

/** Caps checked in the same transaction that adds a process or a schedule. */
export interface BackgroundCaps {
  readonly maxPerDestination: number;
  readonly maxTotal: number;
}

/** `added`, or nothing added: the chat's (`destination`) or the gateway's (`total`) count is at its cap. */
/** `taken`: a record of that id exists already (two new random ids can meet): choose another. */
export type CappedAdd =
  | { readonly status: 'added' }
  | { readonly status: 'taken' }
  | { readonly status: 'full'; readonly scope: 'destination' | 'total'; readonly open: number };

/** How a background command ended. */
export interface ProcessExit {
  /** The exit code, or undefined when a signal ended it or it is not known. */
  readonly code?: number | undefined;
  readonly signal?: string | undefined;
  readonly endedAt: number;
  /** What is known of how it ended when no status was recorded (killed with the gateway's own kill, say). */
  readonly note?: string | undefined;
}

/**
 * A background command started by the terminal tool: what it runs, where its watcher reports
 * (the routing captured at spawn) and how far it got. Kept until its last notification is
 * recorded in the outbox, so a restart adopts the command or reports its end.
 */
export interface ProcessRecord {
  /** Short and shown to users: `/kill <id>`. */
  readonly id: string;
  /** The routing of the execute_tool span that spawned it: the watcher's context and link. */
  readonly origin: RoutingSnapshot;
  /** The origin's chat and thread, for /jobs and the per-chat cap. */
  readonly destination: Destination;
  readonly command: string;
  /** The wrapper's pid, which is also its process group id. */
  readonly pid: number;
  /**
   * The gateway instance whose host runs it (THREADLINE_INSTANCE_ID, distributed mode): only
   * that instance may watch, adopt or kill it. Undefined in the embedded store, whose one
   * gateway runs them all.
   */
  readonly instance?: string | undefined;
  readonly startedAt: number;
  readonly notifyOnComplete: boolean;
  /** Progress updates every this many ms until it ends; undefined: none. */
  readonly checkIntervalMs?: number | undefined;
  /** Progress updates recorded so far: the next one's delivery id. */
  readonly progressSent: number;
  /** Set once it ended; the record stays until its notification is recorded. */
  readonly exit?: ProcessExit | undefined;
}

/**
 * A process as the forensics commands read it: a damaged row is reported with what can be read,
 * its origin or destination undefined when the stored one does not parse.
 */
export interface ProcessState extends Omit<ProcessRecord, 'origin' | 'destination'> {
  readonly origin: RoutingSnapshot | undefined;
  readonly destination: Destination | undefined;
}

export interface ProcessTable {
  /** Adds the record unless a cap refuses it, atomically with the count. */
  add(record: ProcessRecord, caps: BackgroundCaps): Promise<CappedAdd>;
  get(id: string): Promise<ProcessRecord | undefined>;
  /** Every record, oldest first: what a start adopts. */
  all(): Promise<ProcessRecord[]>;
  /** The records of one chat and thread, oldest first. */
  ofDestination(destination: Destination): Promise<ProcessRecord[]>;
  ended(id: string, exit: ProcessExit): Promise<void>;
  progressed(id: string, progressSent: number): Promise<void>;
  /** Its last notification is recorded (or none was asked for): forget it. */
  remove(id: string): Promise<void>;
  /**
   * Ended processes that asked to be told of their end, ended before `query.before`, whose
   * completion notice (`proc:<id>:done`) is not recorded as done; latest end first.
   */
  unreported(query: OverdueQuery): Promise<UnreportedProcess[]>;
}

/** An ended process whose end was not reported, and its completion notice when the outbox has one. */
export interface UnreportedProcess {
  readonly record: ProcessState & { readonly exit: ProcessExit };
  readonly notice?: DeliveryState;
}

/** A reminder (one shot) or a cron job, with where it reports. */
export interface ScheduleRecord {
  /** Short and shown to users: `/cron rm <id>`. */
  readonly id: string;
  /** The routing of the execute_tool span that created it: each run's context and link. */
  readonly origin: RoutingSnapshot;
  /** The origin's chat and thread, for `/cron list` and the per-chat cap. */
  readonly destination: Destination;
  /** Where runs deliver: `origin`, `home`, `home:<platform>` or `platform:chat[:thread]`. */
  readonly target: string;
  /** The text each run delivers. */
  readonly text: string;
  /** A cron expression (croner's syntax); undefined for a one-shot reminder. */
  readonly cron?: string | undefined;
  /** The IANA time zone the expression is read in; undefined: UTC. */
  readonly timezone?: string | undefined;
  /** When the next run is due (ms since the epoch). */
  readonly nextAt: number;
  readonly createdAt: number;
}

/**
 * A schedule as the forensics commands read it: a damaged row is reported with what can be read,
 * its origin or destination undefined when the stored one does not parse.
 */
export interface ScheduleState extends Omit<ScheduleRecord, 'origin' | 'destination'> {
  readonly origin: RoutingSnapshot | undefined;
  readonly destination: Destination | undefined;
}

export interface ScheduleTable {
  /** Adds the record unless a cap refuses it, atomically with the count. */
  add(record: ScheduleRecord, caps: BackgroundCaps): Promise<CappedAdd>;
  /** Up to `limit` records due by `now`, earliest first. */
  due(now: number, limit: number): Promise<ScheduleRecord[]>;
  /** When the earliest record is due; undefined when none is scheduled. */
  nextAt(): Promise<number | undefined>;
  /** Every record, earliest due first (the caps bound how many). */
  all(): Promise<ScheduleRecord[]>;
  /** The records of one chat and thread, by due time. */
  ofDestination(destination: Destination): Promise<ScheduleRecord[]>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /**
   * A run of the one due at `ranAt` is recorded: due again at `nextAt`, or removed when
   * undefined. Nothing changes unless it is still due at `ranAt`, so two runners cannot both
   * advance it. True when it changed.
   */
  advance(id: string, ranAt: number, nextAt: number | undefined): Promise<boolean>;
  /** True when it existed. */
  remove(id: string): Promise<boolean>;
  /**
   * Records due before `query.before` (their run has not happened), latest due first. A chat
   * matches the record's destination, origin, explicit target, or the home channel it targets.
   */
  overdue(query: OverdueQuery): Promise<ScheduleState[]>;
}

/** One entry of a conversation as the model sees it. */
export interface HistoryEntry {
  readonly role: 'user' | 'assistant' | 'tool';
  readonly text: string;
  /** Mirrored text: the platform it was sent from (`cli` outside the gateway). */
  readonly source?: string | undefined;
  /** What the model needs besides text (its tool calls, the call a tool result answers), as JSON. */
  readonly extra?: string | undefined;
  readonly at: number;
}

/**
 * Conversations with the model, per session, bounded: each append keeps the newest `keep`
 * entries of its session. Mirrored entries belong to a chat and thread (a destination), not a
 * session: every session of that destination sees them.
 */
export interface HistoryLog {
  append(sessionId: string, destination: Destination, entries: readonly HistoryEntry[], keep: number): Promise<void>;
  mirror(destination: Destination, entry: HistoryEntry, keep: number): Promise<void>;
  /** The newest `limit` entries of the session and of its destination's mirrored ones, oldest first. */
  recent(sessionId: string, destination: Destination, limit: number): Promise<HistoryEntry[]>;
}

/**
 * The results of tool calls whose effect no id of their own makes once (a foreground shell
 * command), each under its call key (call-key.ts) and with the message whose turn made it:
 * a turn run again after a crash is answered with the result instead of running the call
 * again. Forgotten when the message completes.
 */
export interface CallResults {
  /** The result recorded under `key` for message `messageId`, as recorded; undefined when none is. */
  get(messageId: string, key: string): Promise<string | undefined>;
  /** Records `result` under `key` (a key recorded already keeps its first result); durable once it resolves. */
  record(messageId: string, key: string, result: string): Promise<void>;
}
