import type { Delivery, DeliveryRecord, Destination } from '../deliveries/delivery.js';
import type { RoutingSnapshot } from '../session/index.js';

/**
 * The persistence seam. Everything is async so that a networked backend (Redis, in the
 * distributed mode) can implement it; the embedded SQLite store answers on its own thread.
 */
export interface Store {
  readonly messages: MessageLog;
  readonly outbox: OutboxStore;
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

/** What is checked in the same transaction that appends a message. */
export interface AcceptChecks {
  /** The destination the message's replies go to; its open deliveries are capped. */
  readonly destination: Destination;
  readonly maxOpenPerDestination: number;
  readonly maxOpenTotal: number;
  /** The platform's id for the message, remembered with `answer` until `keyExpiresAt`. */
  readonly idempotency?: { readonly key: string; readonly answer: string; readonly expiresAt: number };
}

export type AcceptOutcome =
  | { readonly status: 'accepted' }
  /** The key was seen: nothing appended; `answer` is what the first message was answered. */
  | { readonly status: 'duplicate'; readonly answer: string }
  /** Nothing appended: the destination's, or every destination's, open deliveries are at their cap. */
  | { readonly status: 'full'; readonly scope: 'destination' | 'total'; readonly open: number };

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

/**
 * The outbox's state, owned by the store alone: each destination's deliveries form a queue
 * whose head is the only one that may be sent, so a chat keeps its order.
 */
export interface OutboxStore {
  add(delivery: NewDelivery, leaseUntil: number): Promise<AddOutcome>;
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
  /** Counts the attempt and makes it pending again, due at `dueAt`; it stays its destination's head. */
  retryAt(id: string, dueAt: number, error: string, leaseUntil: number): Promise<void>;
  /** Gives up: kept as a dead letter with its last error. True as for markDone. */
  markFailed(id: string, error: string, leaseUntil: number): Promise<boolean>;
  /** At start-up, under the data dir's lock: deliveries being sent by an earlier process are due now. */
  releaseLeases(now: number): Promise<void>;
  /** Failed deliveries (one by id, or all) made pending again with a fresh series of attempts; how many. */
  retryFailed(id: string | undefined): Promise<number>;
  /** The newest deliveries, failed ones only if asked, of one chat if asked. */
  list(filter: { readonly failedOnly?: boolean; readonly chatId?: string; readonly limit: number }): Promise<DeliveryRecord[]>;
  pressure(maxOpenPerDestination: number): Promise<OutboxPressure>;
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
