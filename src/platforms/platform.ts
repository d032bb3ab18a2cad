import type { FastifyInstance } from 'fastify';
import type { ChatType, InboundTrace, SessionInput } from '../session/index.js';
import type { Attachment, CommandButton, DeliveryKind, Destination } from '../session/delivery.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by a platform on its intake routes (`config: { platform: name }`): a refusal there is a message refused on it. */
    platform?: string;
  }
}

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
  /** The platform's id for the message was seen before: this is the first one's answer, and no turn runs. */
  readonly duplicate?: boolean;
}

/** How intake recognises a message the platform (or a client) sends again. */
export interface Idempotency {
  /** The platform's own id for the message, unique among its messages. */
  readonly key: string;
  /** How long it is remembered: longer than the platform's redelivery window. */
  readonly ttlMs: number;
  /** What the message says, hashed: the same key with another fingerprint is a conflict, not a retry. */
  readonly fingerprint?: string;
}

/** What an adapter hands inbound messages to. */
export interface Intake {
  /**
   * Validates, persists and queues a message; resolves once it is durable, or with the first
   * answer when `idempotency` names a message already taken. Throws a ThreadlineError
   * (TL_SESSION_INVALID, TL_INTAKE_FULL, TL_CHAT_BACKLOG_FULL, TL_OUTBOX_FULL, TL_STARTING,
   * TL_SHUTTING_DOWN, TL_STORE_FAILED) otherwise.
   */
  accept(message: InboundMessage, inbound: InboundTrace, idempotency?: Idempotency): Promise<AcceptedMessage>;
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
  /** A file to send with (or instead of) the text: Telegram sends audio/ogg as a voice note, Slack uploads it, the webhook carries it. */
  readonly attachment?: Attachment;
  /**
   * The platform message id (in this destination) of a live message this text replaces: an
   * edit of it, or a new message when it cannot be edited. Platforms that cannot edit ignore it.
   */
  readonly replaces?: string;
  /** A button that posts a command as its presser; platforms without buttons ignore it (the text says what to type). */
  readonly button?: CommandButton;
  readonly traceId: string;
}

/** Where a turn shows that it is at work: the chat and thread its message came from, and the kind of chat. */
export interface PresenceTarget {
  readonly destination: Destination;
  readonly chatType: ChatType;
  /** The platform id of the message the turn answers, when there is one (the reply anchor). */
  readonly inReplyTo?: string | undefined;
}

/**
 * A chat platform: a thin adapter that parses inbound requests into InboundMessages and
 * sends OutboundMessages. send() throws DeliveryError, with `retryable` set for network
 * failures, 5xx and 429 (and retryAfterMs when the platform said how long to wait).
 */
export interface Platform {
  readonly name: string;
  /** The platform proves who sent each message (a signature, a secret, a bearer token); only then can a user id name an admin. */
  readonly authenticatesSenders?: boolean;
  register(app: FastifyInstance, intake: Intake): void;
  send(message: OutboundMessage, signal: AbortSignal): Promise<void>;
  /** One line for the start-up banner: where it listens and where it sends. */
  describe(baseUrl: string): string;
  /** Starts what the platform runs on its own (a polling loop), once the gateway takes messages. */
  start?(intake: Intake): void;
  /** Stops it again, before the gateway stops taking messages. */
  close?(): Promise<void>;
  /**
   * Shows "typing…" in the target's chat and thread, for a few seconds (the caller repeats it).
   * Best-effort: no retries; a platform that cannot show it there resolves without a call.
   */
  typing?(target: PresenceTarget, signal: AbortSignal): Promise<void>;
  /**
   * Shows `text` as the answer being written, ephemeral (the final answer is a delivery of its
   * own): `draftId` (non-zero) names one answer, so updates replace each other. Resolves false
   * where the platform cannot show a draft (then the turn stops asking); throws DeliveryError
   * (with retryAfterMs on a 429) when a call failed.
   */
  draft?(target: PresenceTarget, draftId: number, text: string, signal: AbortSignal): Promise<boolean>;
  /**
   * Where drafts are not shown, the answer being written can be a live message: posted once
   * (`postLive`, resolving the platform's id of it), edited as it grows (`editLive`), and
   * replaced by the final text's delivery (OutboundMessage.replaces). `liveIntervalMs` is the
   * least time between two calls for the target, by the platform's rate limits; 0: no live
   * message there. Both throw DeliveryError (retryAfterMs on a 429).
   */
  liveIntervalMs?(target: PresenceTarget): number;
  postLive?(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string>;
  editLive?(target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void>;
}
