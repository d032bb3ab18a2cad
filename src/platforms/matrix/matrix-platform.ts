import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError } from '../../errors.js';
import type { LeaseFactory } from '../../lease/lease.js';
import type { Attachment } from '../../session/delivery.js';
import { inboundContext, runDetached, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import type { SyncTokens } from '../../store/store.js';
import { safeUrl } from '../../text/redact-secrets.js';
import { AcceptOnce } from '../accept-once.js';
import type { Idempotency, InboundMessage, Intake, OutboundMessage, Platform, PresenceTarget } from '../platform.js';
import { MatrixClient } from './matrix-client.js';
import { editContent, fileContent, noticeContent, placementOf, type Placement } from './matrix-content.js';
import { matrixDeliveryError, statusOf } from './matrix-errors.js';
import { isEventId, isRoomId } from './matrix-ids.js';
import { MatrixSyncer } from './matrix-syncer.js';
import { untilAborted } from '../until-aborted.js';

export interface MatrixOptions {
  /** The client-server API root; tests point it at a local fake. */
  readonly homeserverUrl: string;
  readonly accessToken: string;
  readonly logger: Logger;
  /** Where the /sync token is kept (the store's), so a restart reads on from it. */
  readonly syncTokens: SyncTokens;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none). */
  readonly keepBaggage?: KeepBaggage;
  /** Several instances on one Redis: /sync runs only on the instance holding this lease. Unset, this instance syncs alone. */
  readonly syncLease?: LeaseFactory | undefined;
  /** Least ms between two edits of a live message; 0: no live messages. */
  readonly liveEditMs?: number | undefined;
  /** How long one /sync waits on the homeserver for events (tests shorten it). */
  readonly pollMs?: number | undefined;
}

/** Synapse's default rc_message: a burst of 10, then one message (or edit) every 5 s; edits at this pace mostly fit. */
export const MATRIX_LIVE_EDIT_MS = 2_000;
/** Typing shows this long unless sent again: a little over the turn's default repeat (4 s). */
const TYPING_MS = 6_000;
/** Refusals that a retry cannot change: the event can never be taken. */
const UNUSABLE: ReadonlySet<string> = new Set(['TL_BAD_REQUEST', 'TL_SESSION_INVALID']);
const HAND_RETRY_MS = 1_000;
/** A batch is read again only after a stop or a crash between its accept and its token: a week covers an outage that long. */
const MATRIX_IDEMPOTENCY_MS = 7 * 24 * 3_600_000;
/** The path of sends, for the delivery span (ids left out: they are chat ids). */
const SEND_TEMPLATE = '/_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}';

/**
 * Matrix through the client-server API (matrix-js-sdk's HTTP layer): `/sync` in, with its
 * `since` token stored and advanced only once a batch is accepted; `PUT …/send/…/{txnId}` out,
 * the delivery id as the transaction id, so a retried send posts once. Replies stay in their
 * thread (`m.thread`). End-to-end encrypted rooms are refused aloud (a warning), not read.
 */
export class MatrixPlatform implements Platform {
  readonly name = 'matrix';
  /** Events come from the bot's own authenticated /sync, their senders vouched for by their homeservers. */
  readonly authenticatesSenders = true;
  private readonly client: MatrixClient;
  private readonly syncer: MatrixSyncer;
  /** An event read again (a batch after a restart) is accepted one at a time with its first reading. */
  private readonly once = new AcceptOnce();
  private readonly inbound: InboundOptions;
  private readonly server: string;
  private user: Promise<string> | undefined;

  constructor(private readonly options: MatrixOptions) {
    this.inbound = { authenticated: true, keepBaggage: options.keepBaggage ?? false };
    this.client = new MatrixClient({ homeserverUrl: options.homeserverUrl, accessToken: options.accessToken });
    this.server = new URL(options.homeserverUrl).hostname;
    this.syncer = new MatrixSyncer(
      {
        client: this.client,
        tokens: options.syncTokens,
        logger: options.logger,
        botUser: (signal) => this.botUser(signal),
        ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
      },
      options.syncLease,
    );
  }

  /** Nothing to register: events are fetched (/sync), not pushed. */
  register(): void {}

  /** Syncs (on the instance holding the lease), and asks who the bot is at once, so a refused token shows at start-up. */
  start(intake: Intake): void {
    runDetached(() =>
      this.botUser().then(
        (user) => this.options.logger.info({ user }, 'matrix: signed in'),
        (error: unknown) => this.options.logger.error({ reason: matrixDeliveryError(error, 'whoami').message }, 'matrix: the homeserver did not say who the access token belongs to; trying again'),
      ),
    );
    this.syncer.start((message, signal) => this.hand(intake, message, signal));
  }

  async close(): Promise<void> {
    await this.syncer.close();
  }

  describe(): string {
    return `matrix: /sync from ${safeUrl(this.options.homeserverUrl)}${this.options.syncLease === undefined ? '' : ' (on the instance holding the sync lease)'}`;
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const { destination, attachment } = message;
    const placement = this.placement(destination.chatId, destination.threadId, message.kind === 'reply' ? message.inReplyTo : undefined);
    trace.getActiveSpan()?.setAttributes({ 'http.request.method': 'PUT', 'server.address': this.server, 'url.template': SEND_TEMPLATE });
    try {
      // The live message of this answer becomes the answer; a new message when it cannot be edited.
      const replaced = message.replaces !== undefined && message.text !== '' && (await this.replaceLive(destination.chatId, message.replaces, message.text, `${message.id}~edit`, signal));
      if (attachment !== undefined) await this.sendFile(destination.chatId, replaced ? '' : message.text, attachment, placement, message.id, signal);
      else if (!replaced) await this.client.sendMessage(destination.chatId, message.id, noticeContent(message.text, placement), signal);
    } catch (error) {
      throw matrixDeliveryError(error, 'a send');
    }
  }

  /** Typing in the room: Matrix shows typing per room, not per thread. */
  async typing(target: PresenceTarget, signal: AbortSignal): Promise<void> {
    if (!isRoomId(target.destination.chatId)) return;
    try {
      await this.client.typing(target.destination.chatId, await this.botUser(signal), TYPING_MS, signal);
    } catch (error) {
      throw matrixDeliveryError(error, 'typing');
    }
  }

  liveIntervalMs(): number {
    return this.options.liveEditMs ?? MATRIX_LIVE_EDIT_MS;
  }

  /** The start of an answer as a message of its own, in the thread, to be edited as it grows. */
  async postLive(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string> {
    const { chatId, threadId } = target.destination;
    const placement = this.placement(chatId, threadId, target.inReplyTo);
    try {
      return await this.client.sendMessage(chatId, `live-${randomUUID()}`, noticeContent(text, placement), signal);
    } catch (error) {
      throw matrixDeliveryError(error, 'a live message');
    }
  }

  async editLive(target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    if (!isRoomId(target.destination.chatId) || !isEventId(messageId)) throw new DeliveryError('A Matrix live message is an event of a room', { retryable: false });
    try {
      await this.client.sendMessage(target.destination.chatId, `edit-${randomUUID()}`, editContent(messageId, text), signal);
    } catch (error) {
      throw matrixDeliveryError(error, 'an edit');
    }
  }

  /**
   * Where a message goes in room `chatId`: refused (never sent elsewhere) when the room or thread
   * id is not one, since a thread id that cannot be named would put the answer outside the thread.
   */
  private placement(chatId: string, threadId: string | undefined, answered: string | undefined): Placement {
    if (!isRoomId(chatId)) throw new DeliveryError('A Matrix chat id is a room id (`!…`)', { retryable: false });
    if (threadId !== undefined && !isEventId(threadId)) {
      throw new DeliveryError('A Matrix thread id is the event id of its root (`$…`): not sent, so it does not land outside its thread', { retryable: false });
    }
    return placementOf(threadId, isEventId(answered) ? answered : undefined);
  }

  /**
   * Edits live message `eventId` into `text`: true when done, false when it can no longer be
   * edited (redacted, gone, or not the bot's), which the homeserver does not refuse by itself.
   */
  private async replaceLive(roomId: string, eventId: string, text: string, txnId: string, signal: AbortSignal): Promise<boolean> {
    if (!isEventId(eventId) || !(await this.editable(roomId, eventId, signal))) {
      this.options.logger.debug({ chat: roomId }, 'live message not editable; sending the answer as a new message');
      return false;
    }
    await this.client.sendMessage(roomId, txnId, editContent(eventId, text), signal);
    return true;
  }

  private async editable(roomId: string, eventId: string, signal: AbortSignal): Promise<boolean> {
    let event: unknown;
    try {
      event = await this.client.event(roomId, eventId, signal);
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
    const e = (typeof event === 'object' && event !== null ? event : {}) as { sender?: unknown; content?: unknown; unsigned?: { redacted_because?: unknown } };
    const content = typeof e.content === 'object' && e.content !== null ? e.content : {};
    return e.sender === (await this.botUser(signal)) && e.unsigned?.redacted_because === undefined && Object.keys(content).length > 0;
  }

  /** The file, uploaded, as an event of its own with the text as its caption. */
  private async sendFile(roomId: string, caption: string, attachment: Attachment, placement: Placement, txnId: string, signal: AbortSignal): Promise<void> {
    const bytes = Buffer.from(attachment.dataBase64, 'base64');
    const uri = await this.client.upload(bytes, attachment.filename, attachment.contentType, signal);
    await this.client.sendMessage(roomId, txnId, fileContent(attachment, uri, bytes.length, caption, placement), signal);
  }

  /** The bot's user id, asked once (again after a failure). */
  private botUser(signal?: AbortSignal): Promise<string> {
    if (this.user === undefined) {
      const asked = this.client.whoami().then(({ userId }) => userId);
      this.user = asked;
      asked.catch(() => {
        if (this.user === asked) this.user = undefined;
      });
    }
    return signal === undefined ? this.user : untilAborted(this.user, signal);
  }

  /**
   * Hands one message to intake, trying again every second while intake is full or the store
   * fails, so it is neither lost (the batch's token waits for it) nor taken twice. One that can
   * never be taken is skipped with a warning; a stop ends the waiting (the batch is read again).
   */
  private async hand(intake: Intake, message: InboundMessage, signal: AbortSignal): Promise<void> {
    const idempotency = idempotencyOf(message);
    await this.once.accept(idempotency.key, async () => {
      for (let tries = 1; ; tries++) {
        try {
          await runDetached(() => intake.accept(message, inboundContext({}, this.inbound), idempotency));
          return;
        } catch (error) {
          if (!(error instanceof ThreadlineError) || error.code === 'TL_SHUTTING_DOWN') throw error;
          if (UNUSABLE.has(error.code)) {
            this.options.logger.warn({ err: error, chat: message.session.chatId }, 'matrix: an event cannot be taken; skipped');
            return;
          }
          if (tries === 1) this.options.logger.warn({ err: error, chat: message.session.chatId }, 'matrix: event not taken yet; trying again every second');
          await sleep(HAND_RETRY_MS, undefined, { signal });
        }
      }
    });
  }
}

/** One event of one room, whichever batch (or reading of it) brought it. */
function idempotencyOf(message: InboundMessage): Idempotency {
  return { key: `matrix:${encodeURIComponent(message.session.chatId)}:${encodeURIComponent(message.session.messageId ?? '')}`, ttlMs: MATRIX_IDEMPOTENCY_MS };
}

