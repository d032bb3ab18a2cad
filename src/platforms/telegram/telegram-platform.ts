import type { FastifyInstance } from 'fastify';
import { Api, GrammyError, InputFile } from 'grammy';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError, messageOf } from '../../errors.js';
import { inboundContext, runDetached, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import { secretsMatch } from '../bearer-token.js';
import type { Idempotency, InboundMessage, Intake, OutboundMessage, Platform, PresenceTarget } from '../platform.js';
import { AcceptOnce } from '../accept-once.js';
import { buttonPressOf, telegramInbound } from './telegram-inbound.js';
import { safeUrl } from '../../text/redact-secrets.js';
import type { Attachment } from '../../session/delivery.js';
import type { LeaseFactory } from '../../lease/lease.js';
import { TelegramPoller } from './telegram-poller.js';

export interface TelegramOptions {
  readonly token: string;
  /** `webhook`: Telegram POSTs updates to us; `polling`: we ask with getUpdates. */
  readonly mode: 'webhook' | 'polling';
  /** Required for webhooks: the secret_token given to setWebhook. */
  readonly webhookSecret?: string | undefined;
  /** The Bot API root; tests point it at a local fake. */
  readonly apiRoot: string;
  readonly logger: Logger;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none). */
  readonly keepBaggage?: KeepBaggage;
  /**
   * Several instances on one Redis: polling runs only on the instance holding this lease (two
   * pollers get 409 Conflict and take each other's updates). Unset, this instance polls alone.
   */
  readonly pollingLease?: LeaseFactory | undefined;
  /** Least ms between two edits of a live message: in private chats, and elsewhere (0: no live messages there). */
  readonly liveEdits?: { readonly dmMs: number; readonly groupMs: number } | undefined;
}

/** Telegram allows about one edit a second in a private chat and 20 a minute in a group. */
export const TELEGRAM_LIVE_EDITS = { dmMs: 1_100, groupMs: 3_100 } as const;

export const TELEGRAM_WEBHOOK_PATH = '/v1/telegram/webhook';
const SECRET_HEADER = 'x-telegram-bot-api-secret-token';
/** Refusals that a retry cannot change: the update itself is unusable, or intake has closed. */
const GIVE_UP: ReadonlySet<string> = new Set(['TL_BAD_REQUEST', 'TL_SESSION_INVALID', 'TL_SHUTTING_DOWN']);
const HAND_RETRY_MS = 1_000;
/** The longest caption Telegram takes on a file. */
const TELEGRAM_CAPTION_MAX = 1024;
/** The longest text a message (and a draft) holds. */
const TELEGRAM_TEXT_MAX = 4096;

/** Where in its chat a message goes: the topic, and the message it answers. */
interface TelegramPlacement {
  readonly message_thread_id?: number;
  readonly reply_parameters?: { readonly message_id: number; readonly allow_sending_without_reply: boolean };
  readonly reply_markup?: { readonly inline_keyboard: { readonly text: string; readonly callback_data: string }[][] };
}

/** Telegram plays only Ogg/Opus as a voice note. */
function isOggAudio(contentType: string): boolean {
  return contentType.split(';')[0]!.trim().toLowerCase() === 'audio/ogg';
}

/**
 * Telegram through grammY: its typed updates in, its Api client out. grammY's own retries
 * stay off; the outbox decides when to try again, honouring retry_after.
 */
export class TelegramPlatform implements Platform {
  readonly name = 'telegram';
  /** Updates come with the webhook secret, or from the Bot API itself when polling. */
  readonly authenticatesSenders = true;
  private readonly api: Api;
  /** Long polling, in the polling mode. */
  private readonly poller: TelegramPoller | undefined;
  /** Telegram redelivers an update whose answer it did not get: accepted one at a time. */
  private readonly once = new AcceptOnce();
  /** How each update's context is built. Polled updates have no headers, so no baggage either. */
  private readonly inbound: InboundOptions;

  constructor(private readonly options: TelegramOptions) {
    this.inbound = { authenticated: true, keepBaggage: options.keepBaggage ?? false };
    // grammY waits up to 500 s by default; a slow send would hold its chat's turn that long.
    this.api = new Api(options.token, { apiRoot: options.apiRoot, timeoutSeconds: 10 });
    this.poller =
      options.mode === 'polling'
        ? new TelegramPoller({ token: options.token, apiRoot: options.apiRoot, logger: options.logger, pollingLease: options.pollingLease })
        : undefined;
  }

  register(app: FastifyInstance, intake: Intake): void {
    if (this.options.mode === 'polling') return;
    const secret = this.options.webhookSecret!;
    app.post(
      TELEGRAM_WEBHOOK_PATH,
      {
        config: { platform: this.name },
        onRequest: async (request) => {
          const presented = request.headers[SECRET_HEADER];
          if (!secretsMatch(typeof presented === 'string' ? presented : undefined, secret)) {
            throw new ThreadlineError('TL_UNAUTHORIZED', `Send the ${SECRET_HEADER} header given to setWebhook`);
          }
        },
      },
      async (request, reply) => {
        const message = parseUpdate(request.body);
        if (message === undefined) {
          this.options.logger.debug({ update: updateId(request.body) }, 'telegram update without text ignored');
          return reply.code(200).send({ ok: true, ignored: true });
        }
        // A 429 from here makes Telegram redeliver later: back-pressure, not loss.
        const idempotency = idempotencyOf(message);
        const accepted = await this.once.accept(idempotency.key, () =>
          intake.accept(message, inboundContext(request.headers, this.inbound), idempotency),
        );
        this.answerPress(request.body);
        if (accepted.duplicate) return reply.code(200).send({ ok: true, duplicate: true });
        return reply.code(200).send({ ok: true, message_id: accepted.messageId, trace_id: accepted.traceId });
      },
    );
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const { destination } = message;
    if (destination.threadId !== undefined && !/^\d+$/.test(destination.threadId)) {
      // Sent without its topic it would land in "General" (pitfall: Replies that lose their thread): refuse instead.
      throw new DeliveryError(`Telegram topic ids are numbers, not ${JSON.stringify(destination.threadId)}`, { retryable: false });
    }
    const placement: TelegramPlacement = {
      ...(destination.threadId === undefined ? {} : { message_thread_id: Number(destination.threadId) }),
      // Only a reply quotes its message; a notification anchored to an old one would too.
      // A button press's reply has no message to quote (its id is the press's).
      ...(message.kind !== 'reply' || message.inReplyTo === undefined || !/^\d+$/.test(message.inReplyTo)
        ? {}
        : { reply_parameters: { message_id: Number(message.inReplyTo), allow_sending_without_reply: true } }),
      ...(message.button === undefined ? {} : { reply_markup: { inline_keyboard: [[{ text: message.button.label, callback_data: message.button.command }]] } }),
    };
    // grammY types its signal with an abort-controller shim; node-fetch accepts the native one.
    const abort = signal as Parameters<Api['sendMessage']>[3];
    try {
      // The live message of this answer becomes the answer; a new message when it cannot be edited.
      const replaced =
        message.replaces !== undefined && message.text !== '' && (await this.replaceLive(destination.chatId, message.replaces, message.text, abort, placement.reply_markup));
      if (message.attachment === undefined) {
        if (!replaced) await this.api.sendMessage(destination.chatId, message.text, placement, abort);
      } else {
        await this.sendFile(destination.chatId, replaced ? '' : message.text, message.attachment, placement, abort);
      }
    } catch (error) {
      throw deliveryError(error);
    }
  }

  /**
   * Edits live message `messageId` to `text`: true when it shows the text now (unchanged text
   * included), false when Telegram cannot edit it (gone, too old, not ours). Rate limits, its
   * own trouble and the network throw, to be retried.
   */
  private async replaceLive(
    chatId: string,
    messageId: string,
    text: string,
    abort: Parameters<Api['sendMessage']>[3],
    markup: TelegramPlacement['reply_markup'],
  ): Promise<boolean> {
    if (!/^\d+$/.test(messageId)) return false;
    try {
      await this.api.editMessageText(chatId, Number(messageId), text, markup === undefined ? undefined : { reply_markup: markup }, abort);
      return true;
    } catch (error) {
      if (!(error instanceof GrammyError) || error.error_code === 429 || error.error_code >= 500) throw error;
      if (/message is not modified/i.test(error.description)) return true;
      this.options.logger.debug({ chat: chatId, code: error.error_code }, 'live message not editable; sending the answer as a new message');
      return false;
    }
  }

  /** Ends the spinner on a pressed button, best-effort: the press was taken either way. */
  private answerPress(update: unknown): void {
    const press = buttonPressOf(update);
    if (press === undefined) return;
    runDetached(() =>
      this.api.answerCallbackQuery(press.queryId).catch((error: unknown) => {
        this.options.logger.debug({ err: error }, 'telegram answerCallbackQuery failed');
      }),
    );
  }

  /** Edits are rate limited harder in groups than in private chats. */
  liveIntervalMs(target: PresenceTarget): number {
    const limits = this.options.liveEdits ?? TELEGRAM_LIVE_EDITS;
    return target.chatType === 'dm' ? limits.dmMs : limits.groupMs;
  }

  /** The start of an answer as a message of its own (in the topic, quoting what it answers), to be edited as it grows. */
  async postLive(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string> {
    const topic = topicOf(target);
    if (topic === null) throw new DeliveryError('Telegram topic ids are numbers', { retryable: false });
    const anchor =
      target.inReplyTo === undefined || !/^\d+$/.test(target.inReplyTo)
        ? {}
        : { reply_parameters: { message_id: Number(target.inReplyTo), allow_sending_without_reply: true } };
    try {
      const sent = await this.api.sendMessage(target.destination.chatId, text.slice(0, TELEGRAM_TEXT_MAX), { ...topic, ...anchor }, signal as Parameters<Api['sendMessage']>[3]);
      return String(sent.message_id);
    } catch (error) {
      throw deliveryError(error);
    }
  }

  async editLive(target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    try {
      await this.api.editMessageText(target.destination.chatId, Number(messageId), text.slice(0, TELEGRAM_TEXT_MAX), undefined, signal as Parameters<Api['sendMessage']>[3]);
    } catch (error) {
      if (error instanceof GrammyError && /message is not modified/i.test(error.description)) return;
      throw deliveryError(error);
    }
  }

  /** sendChatAction `typing` in the chat and topic: Telegram shows it about 5 seconds. */
  async typing(target: PresenceTarget, signal: AbortSignal): Promise<void> {
    const topic = topicOf(target);
    if (topic === null) return;
    try {
      await this.api.sendChatAction(target.destination.chatId, 'typing', topic, signal as Parameters<Api['sendChatAction']>[3]);
    } catch (error) {
      throw deliveryError(error);
    }
  }

  /**
   * sendMessageDraft, which Telegram offers in private chats only: the answer so far, shown
   * while it is written and gone once the final message (a sendMessage) arrives.
   */
  async draft(target: PresenceTarget, draftId: number, text: string, signal: AbortSignal): Promise<boolean> {
    const topic = topicOf(target);
    const chatId = Number(target.destination.chatId);
    if (topic === null || target.chatType !== 'dm' || !Number.isSafeInteger(chatId) || text.trim() === '') return false;
    try {
      await this.api.sendMessageDraft(chatId, draftId, text.slice(0, TELEGRAM_TEXT_MAX), topic, signal as Parameters<Api['sendMessageDraft']>[4]);
      return true;
    } catch (error) {
      throw deliveryError(error);
    }
  }

  /**
   * Ogg/Opus as a voice note (sendVoice), anything else as a document (sendDocument), with the
   * text as its caption. A text longer than a caption holds goes first as a message of its own.
   */
  private async sendFile(chatId: string, text: string, attachment: Attachment, placement: TelegramPlacement, abort: Parameters<Api['sendMessage']>[3]): Promise<void> {
    const captioned = text.length <= TELEGRAM_CAPTION_MAX;
    if (!captioned) await this.api.sendMessage(chatId, text, placement, abort);
    const file = new InputFile(Buffer.from(attachment.dataBase64, 'base64'), attachment.filename);
    const options = { ...placement, ...(captioned && text !== '' ? { caption: text } : {}) };
    if (isOggAudio(attachment.contentType)) await this.api.sendVoice(chatId, file, options, abort);
    else await this.api.sendDocument(chatId, file, options, abort);
  }

  describe(baseUrl: string): string {
    return this.options.mode === 'polling'
      ? `telegram: long polling ${safeUrl(this.options.apiRoot)}${this.options.pollingLease === undefined ? '' : ' (on the instance holding the polling lease)'}`
      : `telegram: POST ${baseUrl}${TELEGRAM_WEBHOOK_PATH}`;
  }

  /** Stops polling once the update in hand is accepted (intake is still open then), and releases the polling lease. */
  async close(): Promise<void> {
    await this.poller?.close();
  }

  /**
   * Hands one update to intake, trying again while the intake is full or the store fails, so
   * the update is neither lost (grammY confirms it once this returns) nor taken twice.
   */
  private async hand(intake: Intake, message: InboundMessage): Promise<void> {
    const idempotency = idempotencyOf(message);
    await this.once.accept(idempotency.key, async () => {
      for (let tries = 1; ; tries++) {
        try {
          return await runDetached(() => intake.accept(message, inboundContext({}, this.inbound), idempotency));
        } catch (error) {
          // Past the shutdown deadline intake is closed for good: stop trying (logged by bot.catch).
          if (!(error instanceof ThreadlineError) || GIVE_UP.has(error.code)) throw error;
          if (tries === 1) this.options.logger.warn({ err: error, chat: message.session.chatId }, 'telegram update not taken yet; trying again every second');
          await new Promise((resolve) => setTimeout(resolve, HAND_RETRY_MS));
        }
      }
    });
  }

  /**
   * Long polling, in the polling mode. While the intake is full the loop waits, so updates stay
   * with Telegram instead of being dropped.
   */
  start(intake: Intake): void {
    this.poller?.start((message) => this.hand(intake, message));
  }
}

/** The topic of a presence target as Telegram takes it; null for a thread id that is no topic id. */
function topicOf(target: PresenceTarget): { message_thread_id?: number } | null {
  const { threadId } = target.destination;
  if (threadId === undefined) return {};
  return /^\d+$/.test(threadId) ? { message_thread_id: Number(threadId) } : null;
}

function parseUpdate(body: unknown): InboundMessage | undefined {
  if (typeof body !== 'object' || body === null) {
    throw new ThreadlineError('TL_BAD_REQUEST', 'A Telegram update is a JSON object');
  }
  return telegramInbound(body);
}

/** Telegram keeps an update it saw no answer for up to 24 hours; remembered a little longer. */
const TELEGRAM_IDEMPOTENCY_MS = 25 * 3_600_000;

/** One message of one chat, whichever update (or redelivery of it) brought it. */
function idempotencyOf(message: InboundMessage): Idempotency {
  return { key: `telegram:${message.session.chatId}:${message.session.messageId ?? ''}`, ttlMs: TELEGRAM_IDEMPOTENCY_MS };
}

function updateId(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as { update_id?: unknown }).update_id : undefined;
}

/** grammY's errors as delivery outcomes: 429 and 5xx and network failures are retried. */
function deliveryError(error: unknown): DeliveryError {
  if (error instanceof GrammyError) {
    const retryable = error.error_code === 429 || error.error_code >= 500;
    const retryAfter = error.parameters.retry_after;
    return new DeliveryError(`Telegram refused ${error.method}: ${error.error_code} ${error.description}`, {
      retryable,
      retryAfterMs: retryAfter === undefined ? undefined : retryAfter * 1000,
      cause: error,
    });
  }
  const reason = messageOf(error);
  return new DeliveryError(`Telegram could not be reached: ${reason}`, { retryable: true, cause: error });
}
