import type { RoutingSnapshot } from '../session/index.js';

/**
 * The persistence seam. Everything is async so that a networked backend (Redis, in the
 * distributed mode) can implement it; the embedded SQLite store answers synchronously
 * inside the promise.
 */
export interface Store {
  readonly messages: MessageLog;
  readonly outbox: Outbox;
  readonly homes: HomeChannels;
  readonly conversations: Conversations;
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

export interface MessageLog {
  append(message: StoredMessage): Promise<void>;
  complete(id: string): Promise<void>;
  /** Messages accepted but not completed, oldest first: what a restart must run again. */
  pending(): Promise<StoredMessage[]>;
}

/** Where a delivery goes. */
export interface Destination {
  readonly platform: string;
  readonly chatId: string;
  readonly threadId?: string;
}

export type DeliveryKind = 'reply' | 'notification' | 'cron' | 'send';

/** One outbound message. `id` is its idempotency key, stable across retries and restarts. */
export interface StoredDelivery {
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly destination: Destination;
  readonly text: string;
  readonly inReplyTo?: string;
  /** The routing of the work that produced it (see the misroute guard). */
  readonly origin: RoutingSnapshot;
  readonly attempts: number;
  readonly createdAt: number;
}

export interface Outbox {
  /** Writes a pending delivery; false when one with this id exists already (a replayed turn). */
  add(delivery: StoredDelivery, dueAt: number): Promise<boolean>;
  markDone(id: string): Promise<void>;
  /** Leases a pending delivery being sent until `until`, so it is not picked up again meanwhile. `add` leases too. */
  lease(id: string, until: number): Promise<void>;
  /** Counts an attempt and sets when to try again; ends the lease. */
  retryAt(id: string, dueAt: number, error: string): Promise<void>;
  /** Gives up: kept for inspection with its last error, never retried. */
  markFailed(id: string, error: string): Promise<void>;
  /**
   * Makes every leased delivery due at `now`: at start-up nothing is being sent any more. One
   * waiting for its retry keeps its time, so a platform's Retry-After outlives a restart.
   */
  releaseLeases(now: number): Promise<void>;
  /**
   * Deliveries due by `now`, oldest first, each the oldest pending one of its destination
   * (so a chat gets its deliveries in order), excluding `skip` (ones being sent).
   */
  due(now: number, limit: number, skip: ReadonlySet<string>): Promise<StoredDelivery[]>;
  /** The earliest due time of a delivery `due` could return, for the retry timer. */
  nextDueAt(): Promise<number | undefined>;
  /** How many deliveries are pending for each destination that has any. */
  pendingByDestination(): Promise<{ destination: Destination; count: number }[]>;
  pendingCount(): Promise<number>;
}

/** The per-platform home channel set by /sethome; target of `home` deliveries. */
export interface HomeChannels {
  get(platform: string): Promise<Destination | undefined>;
  set(destination: Destination): Promise<void>;
}

/**
 * Conversation epochs: /new starts a new conversation in the same chat by bumping the
 * epoch, which is part of the session id.
 */
export interface Conversations {
  epoch(key: string): Promise<number>;
  next(key: string): Promise<number>;
}
