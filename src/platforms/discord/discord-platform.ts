import { DiscordAPIError, HTTPError, RateLimitError, REST, type RawFile } from '@discordjs/rest';
import { ButtonStyle, ComponentType, InteractionResponseType, MessageFlags, Routes, type APIActionRowComponent, type APIAllowedMentions, type APIComponentInMessageActionRow, type APIInteractionResponse, type APIMessage, type RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DeliveryError, ThreadlineError, messageOf } from '../../errors.js';
import type { LeaseFactory } from '../../lease/lease.js';
import type { Destination } from '../../session/delivery.js';
import type { SyncTokens } from '../../store/store.js';
import { inboundContext, runDetached, type InboundHeaders, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import { safeUrl } from '../../text/redact-secrets.js';
import type { AcceptedMessage, InboundMessage, Intake, OutboundMessage, Platform, PresenceTarget } from '../platform.js';
import type { KeyObject } from 'node:crypto';
import { DiscordConnection } from './discord-connection.js';
import { discordInbound, isSnowflake, takenMessage, threadRequest, type DiscordMessage } from './discord-inbound.js';
import { discordInteraction, type DiscordCommand, type DiscordInteraction } from './discord-interaction.js';
import { discordPublicKey, discordSignatureValid } from './discord-signature.js';
import { discordNonce, discordPieces } from './discord-text.js';
import { DiscordThreads } from './discord-threads.js';

export interface DiscordOptions {
  readonly botToken: string;
  /** The REST root without its version (`https://discord.com/api`); tests point it at a local fake. */
  readonly apiRoot: string;
  readonly logger: Logger;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none; Gateway messages carry none). */
  readonly keepBaggage?: KeepBaggage;
  /** Several instances on one Redis: the Gateway is connected only on the instance holding this lease. */
  readonly gatewayLease?: LeaseFactory | undefined;
  /** The store's sync tokens: the Gateway session is kept there for the next connection (a restart, the next lease holder); unset, it is not kept. */
  readonly syncTokens?: SyncTokens | undefined;
  /** Least ms between two edits of a live message; 0: no live messages. */
  readonly liveEditMs?: number | undefined;
  /** REST calls a second across all routes: Discord's global limit for the bot (50 unless it granted more). */
  readonly requestsPerSecond?: number | undefined;
  /** The application's public key (hex): set, slash commands come in at DISCORD_INTERACTIONS_PATH. */
  readonly publicKey?: string | undefined;
  /**
   * The longest rate-limit wait the REST client sits out inside a call; a longer one fails the
   * call with its retry-after, and the outbox waits it out (a send never holds its lease that long).
   */
  readonly inlineRateLimitMs?: number | undefined;
}

/** A channel takes about 5 messages or edits every 5 s. */
export const DISCORD_LIVE_EDIT_MS = 1_200;
export const DISCORD_INTERACTIONS_PATH = '/v1/discord/interactions';
const SIGNATURE_HEADER = 'x-signature-ed25519';
const TIMESTAMP_HEADER = 'x-signature-timestamp';
const MAX_INTERACTION_BYTES = 64 * 1024;
/** Discord's global limit for a bot, unless it granted more. */
const DISCORD_REQUESTS_PER_SECOND = 50;
/** Waits up to this are sat out by the REST client, per route bucket or globally, as Discord asks. */
const INLINE_RATE_LIMIT_MS = 2_000;
/** Within the delivery lease: a send may take 10 s. */
const REQUEST_TIMEOUT_MS = 10_000;
/** A message's id is unique across Discord; remembered past any replay of a resumed session. */
const DISCORD_IDEMPOTENCY_MS = 24 * 3_600_000;
/** Refusals that a retry cannot change: the message itself is unusable, or intake has closed. */
const GIVE_UP: ReadonlySet<string> = new Set(['TL_BAD_REQUEST', 'TL_SESSION_INVALID', 'TL_SHUTTING_DOWN']);
const HAND_RETRY_MS = 1_000;
/** Edits Discord refuses for good: the message is gone (Unknown Message), or not the bot's. */
const NOT_EDITABLE: ReadonlySet<unknown> = new Set([10008, 50005]);
/** Nobody is pinged by what the bot writes: model text cannot reach @everyone, a role or a user. */
const NO_PINGS: APIAllowedMentions = { parse: [] };

/**
 * Discord: the Gateway (a websocket, through @discordjs/ws) for messages, since HTTP
 * interactions never carry them, and the REST API (through @discordjs/rest, whose per-route
 * buckets and global limit pace every call) for answers, typing and live messages. A thread
 * is a channel of its own: the chat is the channel it belongs to and the thread id its
 * channel id, and whatever goes to a thread is sent to that channel.
 */
export class DiscordPlatform implements Platform {
  readonly name = 'discord';
  /** Messages come over the bot's own authenticated Gateway connection. */
  readonly authenticatesSenders = true;
  private readonly rest: REST;
  private readonly connection: DiscordConnection;
  private readonly threads: DiscordThreads;
  private readonly inbound: InboundOptions;
  /** Verifies interactions; undefined when slash commands are off. */
  private readonly publicKey: KeyObject | undefined;

  constructor(private readonly options: DiscordOptions) {
    this.publicKey = options.publicKey === undefined ? undefined : discordPublicKey(options.publicKey);
    this.inbound = { authenticated: true, keepBaggage: options.keepBaggage ?? false };
    const inlineMs = options.inlineRateLimitMs ?? INLINE_RATE_LIMIT_MS;
    this.rest = new REST({
      api: options.apiRoot,
      version: '10',
      // 5xx and network failures are the outbox's to retry, with its back-off.
      retries: 0,
      timeout: REQUEST_TIMEOUT_MS,
      rejectOnRateLimit: (limit) => limit.retryAfter > inlineMs,
      globalRequestsPerSecond: options.requestsPerSecond ?? DISCORD_REQUESTS_PER_SECOND,
    }).setToken(options.botToken);
    this.threads = new DiscordThreads(this.rest);
    this.connection = new DiscordConnection({ token: options.botToken, rest: this.rest, logger: options.logger, lease: options.gatewayLease, syncTokens: options.syncTokens });
  }

  /**
   * Interactions over HTTP, when a public key is set: Discord POSTs each one, signed (Ed25519
   * over timestamp and raw body), and takes the response body as its answer (see answer()).
   */
  register(app: FastifyInstance, intake: Intake): void {
    const publicKey = this.publicKey;
    if (publicKey === undefined) return;
    // Encapsulated: only this route sees its body as the raw string the signature covers.
    void app.register(async (scope) => {
      scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_INTERACTION_BYTES }, (_request, body, done) => done(null, body));
      scope.post(DISCORD_INTERACTIONS_PATH, { config: { platform: this.name } }, async (request, reply) => {
        const raw = request.body as string;
        const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined);
        if (!discordSignatureValid(publicKey, header(TIMESTAMP_HEADER), header(SIGNATURE_HEADER), raw)) {
          throw new ThreadlineError('TL_UNAUTHORIZED', 'Discord signature missing, wrong or outside the 5-minute window');
        }
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          throw new ThreadlineError('TL_BAD_REQUEST', 'The Discord interaction body is not JSON');
        }
        return reply.send(await this.answer(intake, discordInteraction(body), request.headers));
      });
    });
  }

  /**
   * An interaction's answer, once what it asks is taken. A PING is answered PONG. A slash
   * command is taken as a message of its channel or thread and answered with its text quoted
   * (the answer follows as a message there); a button press, as its command from the presser,
   * answered with no change to the message. What the gateway cannot take now is answered only
   * to its user, saying why: Discord would show its own failure for anything else.
   */
  private async answer(intake: Intake, interaction: DiscordInteraction, headers: InboundHeaders): Promise<APIInteractionResponse> {
    if (interaction.kind === 'ping') return { type: InteractionResponseType.Pong };
    if (interaction.kind === 'other') return onlyToUser('threadline takes slash commands and its own buttons only.');
    try {
      await this.takeCommand(intake, interaction, headers);
    } catch (error) {
      if (!(error instanceof ThreadlineError)) throw error;
      return onlyToUser(`Not taken: ${error.message}`);
    }
    if (interaction.kind === 'press') return { type: InteractionResponseType.DeferredMessageUpdate };
    return { type: InteractionResponseType.ChannelMessageWithSource, data: { content: discordPieces(`> ${interaction.text}`)[0]!, allowed_mentions: NO_PINGS } };
  }

  /** A slash command or a button press to intake, as a message of the channel or thread it was used in (nothing to quote). */
  private async takeCommand(intake: Intake, command: DiscordCommand, headers: InboundHeaders): Promise<AcceptedMessage> {
    let parent = command.parentId;
    if (!command.known && command.guildId !== undefined) {
      try {
        parent = await this.threads.parentOf(command.channelId);
      } catch (error) {
        throw new ThreadlineError('TL_STARTING', `Discord did not say where the command was used (${messageOf(error)}); try again`, { cause: error });
      }
    }
    const message = discordInbound(command, parent, false);
    return intake.accept(message, inboundContext(headers, this.inbound), { key: `discord:interaction:${command.id}`, ttlMs: DISCORD_IDEMPOTENCY_MS });
  }

  /**
   * An interaction that came over the Gateway (no Interactions Endpoint URL is set): taken as
   * over HTTP, its answer POSTed to its callback route. Best-effort: past Discord's 3 seconds
   * the user sees "interaction failed", but what was asked is taken all the same.
   */
  private async handInteraction(intake: Intake, data: unknown): Promise<void> {
    const interaction = discordInteraction(data);
    if (interaction.kind !== 'command' && interaction.kind !== 'press') return;
    const answer = await runDetached(() => this.answer(intake, interaction, {}));
    if (interaction.token === undefined) return;
    try {
      await this.rest.post(Routes.interactionCallback(interaction.id, interaction.token), { body: answer, auth: false });
    } catch (error) {
      this.options.logger.debug({ err: error }, 'discord interaction not answered');
    }
  }

  /** Connects the Gateway once the gateway takes messages. */
  start(intake: Intake): void {
    this.connection.start((event, data, botId) => (event === 'interaction' ? this.handInteraction(intake, data) : this.hand(intake, data, botId)));
  }

  /** Disconnects once every message received is taken (intake is still open then), and releases the Gateway lease. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const channel = channelOf(message.destination);
    if (channel === undefined) throw new DeliveryError(`Discord channel ids are snowflakes, not ${JSON.stringify(message.destination.threadId ?? message.destination.chatId)}`, { retryable: false });
    const pieces = discordPieces(message.text);
    const { attachment } = message;
    const files: RawFile[] =
      attachment === undefined ? [] : [{ name: attachment.filename, contentType: attachment.contentType, data: Buffer.from(attachment.dataBase64, 'base64') }];
    const buttons = buttonRow(message);
    // Only a reply quotes its message, in the channel the message was written in.
    const reference = message.kind === 'reply' && isSnowflake(message.inReplyTo) ? { message_id: message.inReplyTo, fail_if_not_exists: false } : undefined;
    let what = 'the message';
    try {
      // The live message of this answer becomes (the start of) the answer; new messages when it cannot be edited.
      what = 'the edit of the live message';
      const replaced = message.replaces !== undefined && message.text !== '' && (await this.replaceLive(channel, message.replaces, pieces[0]!, signal));
      what = 'the message';
      const rest = replaced ? pieces.slice(1) : pieces;
      if (rest.length === 0 && files.length > 0) rest.push('');
      // The button goes under the answer's last message: the edited live one when nothing follows it.
      if (replaced && rest.length === 0 && buttons !== undefined) {
        what = 'the edit of the live message';
        await this.rest.patch(Routes.channelMessage(channel, message.replaces!), { body: { components: buttons }, signal });
      }
      for (const [index, content] of rest.entries()) {
        const number = index + (replaced ? 1 : 0);
        const last = index === rest.length - 1;
        const body: RESTPostAPIChannelMessageJSONBody = {
          content,
          nonce: discordNonce(message.id, number),
          enforce_nonce: true,
          allowed_mentions: NO_PINGS,
          ...(index === 0 && !replaced && reference !== undefined ? { message_reference: reference } : {}),
          ...(last && buttons !== undefined ? { components: buttons } : {}),
        };
        await this.rest.post(Routes.channelMessages(channel), { body, ...(last && files.length > 0 ? { files } : {}), signal });
      }
    } catch (error) {
      throw deliveryError(error, what);
    }
  }

  /**
   * Edits live message `messageId` to `text`: true when it shows the text now, false when
   * Discord cannot edit it (gone, not the bot's). Rate limits, its own trouble and the network
   * throw, to be retried.
   */
  private async replaceLive(channel: string, messageId: string, text: string, signal: AbortSignal): Promise<boolean> {
    if (!isSnowflake(messageId)) return false;
    try {
      await this.rest.patch(Routes.channelMessage(channel, messageId), { body: { content: text, allowed_mentions: NO_PINGS }, signal });
      return true;
    } catch (error) {
      if (!(error instanceof DiscordAPIError) || !NOT_EDITABLE.has(error.code)) throw error;
      this.options.logger.debug({ channel, code: error.code }, 'live message not editable; sending the answer as a new message');
      return false;
    }
  }

  /** POST /channels/{id}/typing in the chat, or in the thread: Discord shows it about 10 seconds, or until the bot's next message. */
  async typing(target: PresenceTarget, signal: AbortSignal): Promise<void> {
    const channel = channelOf(target.destination);
    if (channel === undefined) return;
    try {
      await this.rest.post(Routes.channelTyping(channel), { signal });
    } catch (error) {
      throw deliveryError(error, 'typing');
    }
  }

  liveIntervalMs(): number {
    return this.options.liveEditMs ?? DISCORD_LIVE_EDIT_MS;
  }

  /** The start of an answer as a message of its own, in the thread, quoting what it answers, to be edited as it grows. */
  async postLive(target: PresenceTarget, text: string, signal: AbortSignal): Promise<string> {
    const channel = channelOf(target.destination);
    if (channel === undefined) throw new DeliveryError('Discord channel ids are snowflakes', { retryable: false });
    const reference = isSnowflake(target.inReplyTo) ? { message_reference: { message_id: target.inReplyTo, fail_if_not_exists: false } } : {};
    try {
      const body: RESTPostAPIChannelMessageJSONBody = { content: discordPieces(text)[0]!, allowed_mentions: NO_PINGS, ...reference };
      const posted = (await this.rest.post(Routes.channelMessages(channel), { body, signal })) as APIMessage;
      return posted.id;
    } catch (error) {
      throw deliveryError(error, 'the live message');
    }
  }

  async editLive(target: PresenceTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    const channel = channelOf(target.destination);
    if (channel === undefined || !isSnowflake(messageId)) throw new DeliveryError('Discord ids are snowflakes', { retryable: false });
    try {
      await this.rest.patch(Routes.channelMessage(channel, messageId), { body: { content: discordPieces(text)[0]!, allowed_mentions: NO_PINGS }, signal });
    } catch (error) {
      throw deliveryError(error, 'the edit of the live message');
    }
  }

  describe(baseUrl: string): string {
    const lease = this.options.gatewayLease === undefined ? '' : ' (on the instance holding the Gateway lease)';
    const commands = this.publicKey === undefined ? '' : `, slash commands at POST ${baseUrl}${DISCORD_INTERACTIONS_PATH}`;
    return `discord: Gateway from ${safeUrl(this.options.apiRoot)}/v10/gateway/bot${lease}${commands}`;
  }

  /**
   * Takes one message to intake, trying again while the intake is full, the store fails or
   * Discord does not say which channel a thread belongs to, so the message is neither lost
   * (Discord does not send it again) nor taken twice.
   */
  private async hand(intake: Intake, data: unknown, botId: string): Promise<void> {
    const taken = takenMessage(data, botId);
    if (taken === undefined) return;
    const idempotency = { key: `discord:${taken.id}`, ttlMs: DISCORD_IDEMPOTENCY_MS };
    for (let tries = 1; ; tries++) {
      try {
        const message = await this.inboundOf(taken);
        await runDetached(() => intake.accept(message, inboundContext({}, this.inbound), idempotency));
        return;
      } catch (error) {
        if (error instanceof ThreadlineError && GIVE_UP.has(error.code)) throw error;
        if (tries === 1) this.options.logger.warn({ err: error, chat: taken.channelId }, 'discord message not taken yet; trying again');
        const wait = error instanceof RateLimitError ? Math.max(error.retryAfter, HAND_RETRY_MS) : HAND_RETRY_MS;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * The message as intake takes it: in its channel or thread, or (`/thread <text>` in a
   * channel) in a thread opened from it, answered there without quoting what started it.
   */
  private async inboundOf(taken: DiscordMessage): Promise<InboundMessage> {
    const parent = await this.parentOf(taken);
    const asked = parent === undefined ? threadRequest(taken) : undefined;
    if (asked === undefined || asked === '') return discordInbound(taken, parent);
    const threadId = await this.threads.startFrom(taken.channelId, taken.id, asked);
    return discordInbound({ ...taken, channelId: threadId, text: asked }, taken.channelId, false);
  }

  /** The channel of the thread a server message was written in; none in a direct message. */
  private parentOf(message: DiscordMessage): Promise<string | undefined> {
    return message.guildId === undefined ? Promise.resolve(undefined) : this.threads.parentOf(message.channelId);
  }
}

/** An interaction response only its user sees. */
function onlyToUser(content: string): APIInteractionResponse {
  return { type: InteractionResponseType.ChannelMessageWithSource, data: { content, flags: MessageFlags.Ephemeral, allowed_mentions: NO_PINGS } };
}

/** A CommandButton as a row of one button whose custom_id is its command: its press comes back as an interaction. */
function buttonRow(message: OutboundMessage): APIActionRowComponent<APIComponentInMessageActionRow>[] | undefined {
  const { button } = message;
  if (button === undefined) return undefined;
  return [{ type: ComponentType.ActionRow, components: [{ type: ComponentType.Button, style: ButtonStyle.Primary, label: button.label.slice(0, 80), custom_id: button.command }] }];
}

/** The channel a destination's messages go to: the thread's own channel when there is a thread. */
function channelOf(destination: Destination): string | undefined {
  const channel = destination.threadId ?? destination.chatId;
  return isSnowflake(channel) ? channel : undefined;
}

/** The REST client's errors as delivery outcomes: a rate limit past the inline wait, 5xx and the network are retried. */
function deliveryError(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  if (error instanceof RateLimitError) {
    return new DeliveryError(`Discord rate-limited ${what}${error.global ? ' (global limit)' : ''}`, { retryable: true, retryAfterMs: error.retryAfter, cause: error });
  }
  if (error instanceof DiscordAPIError) {
    const retryable = error.status === 429 || error.status >= 500;
    return new DeliveryError(`Discord refused ${what}: ${error.status} ${String(error.code)} ${error.message}`, { retryable, cause: error });
  }
  if (error instanceof HTTPError) {
    return new DeliveryError(`Discord answered ${error.status} to ${what}`, { retryable: error.status >= 500 || error.status === 429, cause: error });
  }
  return new DeliveryError(`Discord could not be reached: ${messageOf(error)}`, { retryable: true, cause: error });
}
