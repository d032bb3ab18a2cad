import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError, messageOf } from '../../errors.js';
import type { LeaseFactory } from '../../lease/lease.js';
import type { Attachment } from '../../session/delivery.js';
import { inboundContext, runDetached, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import { safeUrl } from '../../text/redact-secrets.js';
import { AcceptOnce } from '../accept-once.js';
import type { Idempotency, InboundMessage, Intake, OutboundMessage, Platform, PresenceTarget } from '../platform.js';
import { MATTERMOST_ID, MattermostApiError, MattermostClient } from './mattermost-client.js';
import { mattermostInbound, type MattermostChannelInfo } from './mattermost-inbound.js';
import { MattermostListener } from './mattermost-listener.js';
import type { MattermostCursor } from './mattermost-stream.js';
import type { SyncTokens } from '../../store/store.js';
import { MATTERMOST_WEBSOCKET_PATH } from './mattermost-socket.js';
import { MATTERMOST_POST_MAX, splitPost } from './mattermost-text.js';
import { untilAborted } from '../until-aborted.js';

export interface MattermostOptions {
  /** The server's address, without a trailing slash. */
  readonly url: string;
  /** A bot account's access token. */
  readonly token: string;
  /** Answer a top-level post in a thread rooted at it. */
  readonly threadTopLevel: boolean;
  /** Least ms between two edits of a live post; 0: no live posts. */
  readonly liveEditMs?: number | undefined;
  /** At start, posts this long before that no instance took are taken; 0: none. */
  readonly catchUpMs: number;
  /** Where the stream keeps how far every post was taken, across restarts and instances. */
  readonly syncTokens?: SyncTokens | undefined;
  readonly logger: Logger;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none). */
  readonly keepBaggage?: KeepBaggage;
  /** Several instances on one Redis: the websocket runs only on the instance holding this lease. */
  readonly lease?: LeaseFactory | undefined;
  /** How often the websocket is pinged (tests shorten it). */
  readonly pingIntervalMs?: number;
}

/** A server with rate limiting on allows 10 requests a second a user by default: one edit a second leaves room for the rest. */
export const MATTERMOST_LIVE_EDIT_MS = 1_000;
/** Longer than the longest catch-up (a day), so a post caught up on again is recognised. */
const MATTERMOST_IDEMPOTENCY_MS = 25 * 3_600_000;
/** Refusals that a retry cannot change: the post itself is unusable, or intake has closed. */
const GIVE_UP: ReadonlySet<string> = new Set(['TL_BAD_REQUEST', 'TL_SESSION_INVALID', 'TL_SHUTTING_DOWN']);
const HAND_RETRY_MS = 1_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** users/me is asked again after this while it fails (the server down, the token refused). */
const WHO_AM_I_RETRY_MS = 5_000;
/** Answers to an edit that mean "post it anew" rather than "try again": gone, not ours, too old to edit. */
const NOT_EDITABLE: ReadonlySet<number> = new Set([400, 403, 404]);

/**
 * Mattermost through its SDK's Client4 (REST) and its websocket: posts come in over the
 * websocket (one connection per deployment, under a lease when instances share Redis), are
 * caught up on over REST after a cut, and answers go out as posts in the post's channel and
 * thread (`root_id`), edited while they are written.
 */
export class MattermostPlatform implements Platform {
  readonly name = 'mattermost';
  /** Posts come over the bot's own authenticated websocket: the server names their authors. */
  readonly authenticatesSenders = true;
  private readonly client: MattermostClient;
  private readonly listener: MattermostListener;
  private readonly once = new AcceptOnce();
  /** Posts carry no headers, so no baggage either. */
  private readonly inbound: InboundOptions;
  /** The bot's user id, from users/me at start: its own posts are never messages. */
  private botUserId: string | undefined;
  private intake: Intake | undefined;
  private closed = false;
  private wakeStart: (() => void) | undefined;
  private starting: Promise<void> | undefined;

  constructor(private readonly options: MattermostOptions) {
    this.inbound = { authenticated: true, keepBaggage: options.keepBaggage ?? false };
    this.client = new MattermostClient({ url: options.url, token: options.token, timeoutMs: REQUEST_TIMEOUT_MS });
    this.listener = new MattermostListener({
      url: options.url,
      token: options.token,
      client: this.client,
      logger: options.logger,
      catchUpMs: options.catchUpMs,
      cursor: options.syncTokens === undefined ? undefined : storedCursor(options.syncTokens),
      lease: options.lease,
      ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
      inbound: (post, channel, senderName) => this.messageOf(post, channel, senderName),
      hand: (message) => this.hand(message),
    });
  }

  /** Posts arrive over the websocket: no route of the gateway's takes them. */
  register(): void {}

  /** Learns the bot's user id (users/me), then listens: from the root context (pitfall: Long-lived loops holding a request's context). */
  start(intake: Intake): void {
    this.intake = intake;
    this.starting ??= runDetached(() => this.begin());
  }

  /** Closes the websocket once the post in hand is taken (intake is still open then), and releases its lease. */
  async close(): Promise<void> {
    this.closed = true;
    this.wakeStart?.();
    await this.starting;
    await this.listener.close();
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const { chatId, threadId } = placeOf(message.destination);
    try {
      const parts = splitPost(message.text);
      // The live post of this answer becomes its first part; a new post when it cannot be edited.
      const replaced = message.replaces !== undefined && message.text !== '' && (await this.replaceLive(message.replaces, parts[0]!, signal));
      const rest = replaced ? parts.slice(1) : parts.filter((part) => part !== '');
      const fileIds = message.attachment === undefined ? [] : [await this.upload(chatId, message.attachment, signal)];
      if (rest.length === 0 && fileIds.length > 0) rest.push('');
      for (const [index, part] of rest.entries()) {
        const last = index === rest.length - 1;
        await untilAborted(
          this.client.createPost({
            channel_id: chatId,
            root_id: threadId,
            message: part,
            // The server answers a repeat within 30 s with the post it made: a retry after a lost answer posts once.
            pending_post_id: pendingPostId(message.id, index),
            ...(last && fileIds.length > 0 ? { file_ids: fileIds } : {}),
          }),
          signal,
        );
      }
    } catch (error) {
      throw deliveryError(error);
    }
  }

  /** Edits cost a request each: one every THREADLINE_MATTERMOST_EDIT_INTERVAL_MS. */
  liveIntervalMs(): number {
    return this.options.liveEditMs ?? MATTERMOST_LIVE_EDIT_MS;
  }

  /** The start of an answer as a post of its own, in the thread, to be edited as it grows. */
  async postLive(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string> {
    const { chatId, threadId } = placeOf(target.destination);
    try {
      const post = await untilAborted(this.client.createPost({ channel_id: chatId, root_id: threadId, message: [...text].slice(0, MATTERMOST_POST_MAX).join('') }), signal);
      return post.id;
    } catch (error) {
      throw deliveryError(error);
    }
  }

  async editLive(_target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    try {
      await untilAborted(this.client.patchPost({ id: messageId, message: [...text].slice(0, MATTERMOST_POST_MAX).join('') }), signal);
    } catch (error) {
      throw deliveryError(error);
    }
  }

  /**
   * "typing…" in the channel and thread for a few seconds: the websocket's `user_typing` where
   * this instance holds it, else users/me/typing over REST.
   */
  async typing(target: PresenceTarget, signal: AbortSignal): Promise<void> {
    const { chatId, threadId } = placeOf(target.destination);
    if (this.listener.socket?.typing(chatId, threadId)) return;
    try {
      await untilAborted(this.client.publishTyping(chatId, threadId), signal);
    } catch (error) {
      throw deliveryError(error);
    }
  }

  describe(): string {
    return `mattermost: websocket ${safeUrl(this.options.url)}${MATTERMOST_WEBSOCKET_PATH}${this.options.lease === undefined ? '' : ' (on the instance holding the websocket lease)'}`;
  }

  /** users/me until it answers, then the websocket. */
  private async begin(): Promise<void> {
    for (let tries = 1; !this.closed; tries++) {
      try {
        const me = await this.client.getMe();
        this.botUserId = me.id;
        this.options.logger.debug({ bot: me.username }, 'mattermost bot known; connecting the websocket');
        this.listener.start();
        return;
      } catch (error) {
        const refused = error instanceof MattermostApiError && (error.status === 401 || error.status === 403);
        const line = refused ? 'mattermost refused THREADLINE_MATTERMOST_TOKEN (users/me): no posts are taken until it is accepted' : 'mattermost users/me failed; trying again';
        if (tries === 1) this.options.logger.error({ err: error }, line);
        else this.options.logger.debug({ err: error }, line);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, WHO_AM_I_RETRY_MS);
          this.wakeStart = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  private messageOf(post: unknown, channel: MattermostChannelInfo, senderName?: unknown): InboundMessage | undefined {
    return mattermostInbound(post, channel, { botUserId: this.botUserId!, threadTopLevel: this.options.threadTopLevel }, senderName);
  }

  /**
   * Hands one post to intake, trying again while the intake is full or the store fails, so it
   * is neither lost nor taken twice; meanwhile the websocket's reading waits (HandQueue).
   */
  private async hand(message: InboundMessage): Promise<void> {
    const intake = this.intake!;
    const idempotency: Idempotency = { key: `mattermost:${message.session.messageId!}`, ttlMs: MATTERMOST_IDEMPOTENCY_MS };
    await this.once.accept(idempotency.key, async () => {
      for (let tries = 1; ; tries++) {
        try {
          return await runDetached(() => intake.accept(message, inboundContext({}, this.inbound), idempotency));
        } catch (error) {
          if (!(error instanceof ThreadlineError) || GIVE_UP.has(error.code) || this.closed) throw error;
          if (tries === 1) this.options.logger.warn({ err: error, chat: message.session.chatId }, 'mattermost post not taken yet; trying again every second');
          await new Promise((resolve) => setTimeout(resolve, HAND_RETRY_MS));
        }
      }
    });
  }

  /**
   * Edits live post `postId` to `text`: true when it shows the text now, false when the server
   * cannot edit it (deleted, not the bot's, past the edit time limit).
   */
  private async replaceLive(postId: string, text: string, signal: AbortSignal): Promise<boolean> {
    if (!MATTERMOST_ID.test(postId)) return false;
    try {
      await untilAborted(this.client.patchPost({ id: postId, message: text }), signal);
      return true;
    } catch (error) {
      if (!(error instanceof MattermostApiError) || !NOT_EDITABLE.has(error.status)) throw error;
      this.options.logger.debug({ status: error.status, error: error.serverErrorId }, 'live post not editable; posting the answer anew');
      return false;
    }
  }

  /** Uploads the file into the channel; its id goes with the post. */
  private async upload(channelId: string, attachment: Attachment, signal: AbortSignal): Promise<string> {
    const form = new FormData();
    form.append('channel_id', channelId);
    form.append('files', new Blob([Buffer.from(attachment.dataBase64, 'base64')], { type: attachment.contentType }), attachment.filename);
    const uploaded = await untilAborted(this.client.uploadFile(form), signal);
    const id = uploaded.file_infos?.[0]?.id;
    if (typeof id !== 'string') throw new DeliveryError('Mattermost answered the file upload without a file id', { retryable: false });
    return id;
  }
}

/** A destination as Mattermost takes it: a channel id, and the thread's root post id ('' for none). */
function placeOf(destination: { readonly chatId: string; readonly threadId?: string | undefined }): { chatId: string; threadId: string } {
  const { chatId, threadId } = destination;
  // A post sent without its thread would land in the channel (pitfall: Replies that lose their thread): refuse instead.
  if (!MATTERMOST_ID.test(chatId)) throw new DeliveryError('Mattermost channel ids are 26 letters and digits', { retryable: false });
  if (threadId !== undefined && !MATTERMOST_ID.test(threadId)) throw new DeliveryError('Mattermost thread ids (root post ids) are 26 letters and digits', { retryable: false });
  return { chatId, threadId: threadId ?? '' };
}

/** The same for every attempt of a delivery's part; the delivery id itself stays out of the server's cache. */
function pendingPostId(deliveryId: string, part: number): string {
  return `tl-${createHash('sha256').update(`${deliveryId}\n${part}`).digest('hex').slice(0, 32)}`;
}


/** A MattermostApiError is a DeliveryError already; anything else is the network's or the SDK's trouble, worth a retry. */
function deliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  return new DeliveryError(`Mattermost could not be reached: ${messageOf(error)}`, { retryable: true, cause: error });
}

/** The sync-token stream of the Mattermost cursor: one bot per deployment, as the websocket lease. */
const CURSOR_STREAM = 'mattermost:posts-taken';

/** The cursor kept as a sync token (server ms as text), moved forward only. */
function storedCursor(tokens: SyncTokens): MattermostCursor {
  const read = async () => {
    const token = await tokens.get(CURSOR_STREAM);
    const at = Number(token);
    return { token, at: token !== undefined && Number.isSafeInteger(at) ? at : undefined };
  };
  return {
    load: async () => (await read()).at,
    save: async (at) => {
      const { token, at: stored } = await read();
      if (stored === undefined || at > stored) await tokens.advance(CURSOR_STREAM, token, String(Math.floor(at)));
    },
  };
}
