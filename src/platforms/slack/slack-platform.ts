import {
  WebAPIFileUploadInvalidArgumentsError,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebClient,
} from '@slack/web-api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError, messageOf } from '../../errors.js';
import { inboundContext, type ChatType, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import type { Intake, OutboundMessage, Platform, PresenceTarget } from '../platform.js';
import { AcceptOnce } from '../accept-once.js';
import { slackClientLogger } from './slack-logger.js';
import { SLACK_COMMAND_ACTION, slackButtonPress, slackInbound } from './slack-inbound.js';
import { slackSignatureValid } from './slack-signature.js';
import { untilAborted } from '../until-aborted.js';

export interface SlackOptions {
  readonly botToken: string;
  readonly signingSecret: string;
  /** The Web API root; tests point it at a local fake. */
  readonly apiUrl: string;
  /** Reply to a top-level message in a thread of its own. */
  readonly threadTopLevel: boolean;
  readonly logger: Logger;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none). */
  readonly keepBaggage?: KeepBaggage;
  /** Least ms between two edits of a live message (chat.update is Tier 3, ~50 a minute); 0: no live messages. */
  readonly liveEditMs?: number | undefined;
}

/** chat.update is Tier 3: about 50 a minute for the workspace. */
export const SLACK_LIVE_EDIT_MS = 1_200;
/** chat.update refusals that mean "post it anew" rather than "try again". */
const NOT_EDITABLE: ReadonlySet<string> = new Set(['message_not_found', 'cant_update_message', 'edit_window_closed', 'channel_not_found']);

export const SLACK_EVENTS_PATH = '/v1/slack/events';
/** Slack's Interactivity Request URL: a press of a button the gateway sent. */
export const SLACK_INTERACTIONS_PATH = '/v1/slack/interactions';
/** Slack retries an event for up to about an hour (three retries, the last after 5 minutes, and replays within the signature's window). */
const SLACK_IDEMPOTENCY_MS = 3_600_000;
const MAX_BODY_BYTES = 64 * 1024;
/** Channels whose chat type is remembered for app_mention events; a forgotten one's comes from its id's prefix. */
const CHANNEL_TYPES_REMEMBERED = 10_000;

/**
 * Slack: Events API in (signature verified over the raw body), chat.postMessage out (an
 * attachment through filesUploadV2) with @slack/web-api's own retries off, so a 429 becomes a DeliveryError with the
 * Retry-After the outbox honours.
 */
export class SlackPlatform implements Platform {
  readonly name = 'slack';
  /** Every event is signed with the signing secret. */
  readonly authenticatesSenders = true;
  private readonly client: WebClient;
  /** Slack's redeliveries and the message/app_mention pair of one message are accepted one at a time. */
  private readonly once = new AcceptOnce();
  /** Chat types that message events showed per channel, for app_mention events, which lack them. */
  private readonly channelTypes = new LRUCache<string, ChatType>({ max: CHANNEL_TYPES_REMEMBERED });
  /** How each event's context is built. */
  private readonly inbound: InboundOptions;

  constructor(private readonly options: SlackOptions) {
    this.inbound = { authenticated: true, keepBaggage: options.keepBaggage ?? false };
    this.client = new WebClient(options.botToken, {
      slackApiUrl: options.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: 10_000,
      // The client queues calls beyond its concurrency limit and starts them from whichever
      // call finished: another chat's context (pitfall: Callbacks in their creator's
      // context). The gateway bounds sends itself.
      maxRequestConcurrency: Number.POSITIVE_INFINITY,
      // Its own logger writes plain text, a failed request's URL with its credentials.
      logger: slackClientLogger(options.logger),
    });
  }

  register(app: FastifyInstance, intake: Intake): void {
    // Encapsulated: only this route sees its body as the raw string the signature covers.
    void app.register(async (scope) => {
      scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
        done(null, body),
      );
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
        done(null, body),
      );
      const signed = (request: FastifyRequest): string => {
        const raw = request.body as string;
        const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined);
        if (!slackSignatureValid(this.options.signingSecret, header('x-slack-request-timestamp'), header('x-slack-signature'), raw)) {
          throw new ThreadlineError('TL_UNAUTHORIZED', 'Slack signature missing, wrong or outside the 5-minute window');
        }
        return raw;
      };
      scope.post(SLACK_INTERACTIONS_PATH, { config: { platform: this.name } }, async (request, reply) => {
        const payload = new URLSearchParams(signed(request)).get('payload');
        let parsed: unknown;
        try {
          parsed = payload === null ? undefined : JSON.parse(payload);
        } catch {
          throw new ThreadlineError('TL_BAD_REQUEST', 'The Slack interaction payload is not JSON');
        }
        const message = slackButtonPress(parsed, (channel) => this.channelTypes.get(channel));
        if (message === undefined) return reply.code(200).send();
        // Each press once, whichever retry of it arrives; two users' presses are two messages.
        const key = `slack:${encodeURIComponent(message.session.chatId)}:${encodeURIComponent(message.session.messageId!)}:${encodeURIComponent(message.session.userId!)}`;
        await this.once.accept(key, () => intake.accept(message, inboundContext(request.headers, this.inbound), { key, ttlMs: SLACK_IDEMPOTENCY_MS }));
        // Slack wants an empty 200 within 3 seconds; what the command answers comes as a message.
        return reply.code(200).send();
      });
      scope.post(SLACK_EVENTS_PATH, { config: { platform: this.name } }, async (request, reply) => {
        const raw = signed(request);
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(raw) as Record<string, unknown>;
        } catch {
          throw new ThreadlineError('TL_BAD_REQUEST', 'The Slack event body is not JSON');
        }
        if (typeof body !== 'object' || body === null) throw new ThreadlineError('TL_BAD_REQUEST', 'The Slack event body is not an object');
        if (body['type'] === 'url_verification') return reply.send({ challenge: String(body['challenge'] ?? '') });
        const message =
          body['type'] === 'event_callback'
            ? slackInbound(body['event'], this.options.threadTopLevel, (channel) => this.channelTypes.get(channel))
            : undefined;
        if (message === undefined) return reply.code(200).send({ ok: true, ignored: true });
        this.channelTypes.set(message.session.chatId, message.session.chatType);
        // Channel and ts name the message: its event_id's redeliveries and its app_mention twin share them.
        const key = `slack:${encodeURIComponent(message.session.chatId)}:${encodeURIComponent(message.session.messageId!)}`;
        const accepted = await this.once.accept(key, () =>
          intake.accept(message, inboundContext(request.headers, this.inbound), { key, ttlMs: SLACK_IDEMPOTENCY_MS }),
        );
        if (accepted.duplicate) return reply.code(200).send({ ok: true, duplicate: true });
        return reply.code(200).send({ ok: true, message_id: accepted.messageId, trace_id: accepted.traceId });
      });
    });
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const { destination, attachment } = message;
    const thread = destination.threadId === undefined ? {} : { thread_ts: destination.threadId };
    const blocks = buttonBlocks(message);
    const method = attachment === undefined ? 'chat.postMessage' : 'the file upload';
    try {
      // The live message of this answer becomes the answer; a new message when it cannot be edited.
      const replaced = message.replaces !== undefined && message.text !== '' && (await this.replaceLive(destination.chatId, message.replaces, message.text, signal, blocks));
      if (replaced && attachment === undefined) return;
      // The client takes no signal: at shutdown the send is let go (it may still land, and the
      // outbox sends it again at the next start: at least once).
      await untilAborted(
        attachment === undefined
          ? this.client.chat.postMessage({ channel: destination.chatId, text: message.text, ...thread, ...(blocks === undefined ? {} : { blocks }) })
          : // files.getUploadURLExternal, the upload, then files.completeUploadExternal sharing it into the chat and thread.
            this.client.filesUploadV2({
              channel_id: destination.chatId,
              file: Buffer.from(attachment.dataBase64, 'base64'),
              filename: attachment.filename,
              ...(message.text === '' || replaced ? {} : { initial_comment: message.text }),
              ...thread,
            }),
        signal,
      );
    } catch (error) {
      throw deliveryError(error, method);
    }
  }

  /**
   * assistant.threads.setStatus "is typing…" in the thread, which Slack clears when the app
   * replies there. Only threads have a status: elsewhere nothing is called.
   */
  async typing(target: PresenceTarget, signal: AbortSignal): Promise<void> {
    const { chatId, threadId } = target.destination;
    if (threadId === undefined) return;
    try {
      await untilAborted(this.client.assistant.threads.setStatus({ channel_id: chatId, thread_ts: threadId, status: 'is typing…' }), signal);
    } catch (error) {
      throw deliveryError(error, 'assistant.threads.setStatus');
    }
  }

  /**
   * chat.update of live message `ts` to `text`: true when done, false when Slack cannot edit it
   * (gone, too old). Rate limits, Slack's own trouble and the network throw, to be retried.
   */
  private async replaceLive(channel: string, ts: string, text: string, signal: AbortSignal, blocks?: ButtonBlocks): Promise<boolean> {
    try {
      await untilAborted(this.client.chat.update({ channel, ts, text, ...(blocks === undefined ? {} : { blocks }) }), signal);
      return true;
    } catch (error) {
      if (error instanceof WebAPIPlatformError && NOT_EDITABLE.has(error.data.error)) {
        this.options.logger.debug({ channel, error: error.data.error }, 'live message not editable; posting the answer anew');
        return false;
      }
      throw deliveryError(error, 'chat.update');
    }
  }

  liveIntervalMs(): number {
    return this.options.liveEditMs ?? SLACK_LIVE_EDIT_MS;
  }

  /** The start of an answer as a message of its own, in the thread, to be edited as it grows. */
  async postLive(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string> {
    const { chatId, threadId } = target.destination;
    try {
      const posted = await untilAborted(this.client.chat.postMessage({ channel: chatId, text, ...(threadId === undefined ? {} : { thread_ts: threadId }) }), signal);
      if (typeof posted.ts !== 'string') throw new DeliveryError('Slack answered chat.postMessage without a ts', { retryable: false });
      return posted.ts;
    } catch (error) {
      throw error instanceof DeliveryError ? error : deliveryError(error, 'chat.postMessage');
    }
  }

  async editLive(target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    try {
      await untilAborted(this.client.chat.update({ channel: target.destination.chatId, ts: messageId, text }), signal);
    } catch (error) {
      throw deliveryError(error, 'chat.update');
    }
  }

  describe(baseUrl: string): string {
    return `slack: POST ${baseUrl}${SLACK_EVENTS_PATH}`;
  }
}


/** ok:false answers that are Slack's trouble, not the message's (the error lists of chat.postMessage and files.*). */
const TRANSIENT_SLACK_ERRORS: ReadonlySet<string> = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);

/** `method` names the call in the message: the upload's platform errors come from its files.* calls. */
function deliveryError(error: unknown, method: string): DeliveryError {
  if (error instanceof WebAPIRateLimitedError) {
    return new DeliveryError(`Slack rate-limited ${method}`, { retryable: true, retryAfterMs: error.retryAfter * 1000, cause: error });
  }
  if (error instanceof WebAPIPlatformError) {
    const retryable = TRANSIENT_SLACK_ERRORS.has(error.data.error);
    return new DeliveryError(`Slack ${retryable ? 'failed' : 'refused'} ${method}: ${error.data.error}`, { retryable, cause: error });
  }
  if (error instanceof WebAPIFileUploadInvalidArgumentsError) {
    // The client refused the file before sending it (empty, say): the same file fails again.
    return new DeliveryError(`Slack's client refused ${method}: ${error.message}`, { retryable: false, cause: error });
  }
  if (error instanceof WebAPIHTTPError) {
    return new DeliveryError(`Slack answered ${error.statusCode}`, { retryable: error.statusCode >= 500, cause: error });
  }
  const reason = messageOf(error);
  return new DeliveryError(`Slack could not be reached: ${reason}`, { retryable: true, cause: error });
}
/** The longest text a section block shows. */
const SECTION_TEXT_MAX = 3_000;

type ButtonBlocks = ReturnType<typeof buttonBlocks> & object;

/**
 * The text as a section and the button beneath it, when the message has a button; undefined
 * otherwise, or when the text is longer than a section shows (then the text alone says what to type).
 */
function buttonBlocks(message: OutboundMessage) {
  const { button } = message;
  if (button === undefined || message.text === '' || message.text.length > SECTION_TEXT_MAX) return undefined;
  return [
    { type: 'section', text: { type: 'plain_text', text: message.text, emoji: false } },
    { type: 'actions', elements: [{ type: 'button', action_id: SLACK_COMMAND_ACTION, text: { type: 'plain_text', text: button.label.slice(0, 75) }, value: button.command }] },
  ];
}
