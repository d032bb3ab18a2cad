import type { FastifyInstance } from 'fastify';
import type { InboundTrace, SessionInput } from '../session/index.js';
import type { DeliveryKind, Destination } from '../store/store.js';

/** A message as a platform adapter parsed it: who it is from and what it says. */
export interface InboundMessage {
  /** Routing without sessionId: the gateway derives it (conversation epochs, per-user groups). */
  readonly session: Omit<SessionInput, 'sessionId'>;
  readonly text: string;
}

export interface AcceptedMessage {
  readonly messageId: string;
  readonly sessionId: string;
  readonly traceId: string;
}

/** What an adapter hands inbound messages to. */
export interface Intake {
  /**
   * Validates, persists and queues a message; resolves once it is durable. Throws a
   * ThreadlineError (TL_SESSION_INVALID, TL_INTAKE_FULL, TL_SHUTTING_DOWN) otherwise.
   */
  accept(message: InboundMessage, inbound: InboundTrace): Promise<AcceptedMessage>;
}

/** One outbound message for a platform to send. */
export interface OutboundMessage {
  /** Idempotency key: the same for every attempt of this delivery. */
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly destination: Destination;
  readonly text: string;
  /** The platform message id to reply to (the reply anchor), when there is one. */
  readonly inReplyTo?: string;
  readonly traceId: string;
}

/**
 * A chat platform: a thin adapter that parses inbound requests into InboundMessages and
 * sends OutboundMessages. send() throws DeliveryError, with `retryable` set for network
 * failures, 5xx and 429 (and retryAfterMs when the platform said how long to wait).
 */
export interface Platform {
  readonly name: string;
  register(app: FastifyInstance, intake: Intake): void;
  send(message: OutboundMessage, signal: AbortSignal): Promise<void>;
  /** One line for the start-up banner: where it listens and where it sends. */
  describe(baseUrl: string): string;
  /** Starts what the platform runs on its own (a polling loop), once the gateway takes messages. */
  start?(intake: Intake): void;
  /** Stops it again, before the gateway stops taking messages. */
  close?(): Promise<void>;
}
