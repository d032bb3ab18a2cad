import { ThreadlineError } from '../errors.js';
import type { RoutingSnapshot } from './index.js';

/** Where a delivery goes: a chat, and a thread of it when there is one. */
export interface Destination {
  readonly platform: string;
  readonly chatId: string;
  readonly threadId?: string;
}

export type DeliveryKind = 'reply' | 'notification' | 'cron' | 'send';

/**
 * `pending`: waiting for its first attempt or its retry (`dueAt`); `sending`: claimed by the
 * gateway until `leaseUntil`; `done`: the platform accepted it; `failed`: given up, kept as a
 * dead letter until pruned.
 */
export type DeliveryStatus = 'pending' | 'sending' | 'done' | 'failed';

/** The largest attachment a delivery may carry: 1 MiB of file, before base64. */
export const MAX_ATTACHMENT_BYTES = 1024 * 1024;

/** A file sent with a delivery: a voice note (`audio/ogg`, Opus) from the tts tool, say. */
export interface Attachment {
  readonly filename: string;
  readonly contentType: string;
  /** The file's bytes, base64 (standard alphabet, padded): plain JSON for the store and the webhook. */
  readonly dataBase64: string;
}

/**
 * A button under a message where the platform has them: pressed, it posts `command` in the
 * message's chat and thread as whoever pressed it, exactly as if they had typed it, so it gives
 * nobody rights they lack. Elsewhere the text says what to type.
 */
export interface CommandButton {
  readonly label: string;
  /** A gateway command (`/confirm ab12cd`): at most 64 bytes, Telegram's limit. */
  readonly command: string;
}

/** The longest command a button carries (Telegram's callback_data limit). */
export const MAX_BUTTON_COMMAND_BYTES = 64;

/** One outbound message. `id` is its idempotency key, stable across retries and restarts. */
export interface Delivery {
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly destination: Destination;
  readonly text: string;
  readonly inReplyTo?: string;
  readonly attachment?: Attachment;
  /**
   * The platform's id of a message in the same destination that this delivery's text replaces
   * (the live message of an answer being written): sent as an edit of it, and as a new message
   * when that edit fails. Never set for a message of another chat or thread.
   */
  readonly replaces?: string;
  /** A button under it, pressed to post a command (see CommandButton). */
  readonly button?: CommandButton;
  /** The routing of the work that produced it (see the misroute guard). */
  readonly origin: RoutingSnapshot;
  /** Attempts made in the current series (a retry from the CLI starts a new one). */
  readonly attempts: number;
  readonly createdAt: number;
  /** When the current series of attempts began: the give-up time counts from here. */
  readonly attemptsSince: number;
}

/** A delivery as the outbox holds it, for listing and inspection. */
export interface DeliveryRecord extends Delivery {
  readonly status: DeliveryStatus;
  readonly dueAt: number;
  readonly leaseUntil?: number;
  readonly lastError?: string;
  readonly finishedAt?: number;
}

/**
 * The one spelling of a destination: `platform:chat[:thread]`, each part percent-encoded so
 * an id holding ':' never splits. The store orders and counts by it; logs, spans and the
 * CLI show it; `parseTarget` reads it back.
 */
export function formatDestination(destination: Destination): string {
  const parts = [destination.platform, destination.chatId];
  if (destination.threadId !== undefined) parts.push(destination.threadId);
  return parts.map(encodeURIComponent).join(':');
}

/** The inverse of formatDestination; TL_TARGET_INVALID for text it cannot have written. */
export function parseDestination(text: string): Destination {
  const parts = text.split(':');
  if (parts.length < 2 || parts.length > 3 || parts.some((part) => part === '')) {
    throw new ThreadlineError(
      'TL_TARGET_INVALID',
      `Target ${JSON.stringify(text.slice(0, 80))} is not origin, home[:platform] or platform:chat[:thread] (percent-encode ':' in ids as %3A)`,
    );
  }
  try {
    const [platform, chatId, threadId] = parts.map(decodeURIComponent) as [string, string, string | undefined];
    return { platform, chatId, ...(threadId === undefined ? {} : { threadId }) };
  } catch (cause) {
    throw new ThreadlineError('TL_TARGET_INVALID', `Target ${JSON.stringify(text.slice(0, 80))} has broken percent-encoding`, { cause });
  }
}
