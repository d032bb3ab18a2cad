import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { parseFormBody, type FormValue } from './fake-telegram.js';
import { FakeDiscordGateway, type FakeGatewayStats } from './fake-discord-gateway.js';
import { parseBody, startLocalServer, type LocalRequest, type LocalResponse, type LocalServer } from './local-server.js';

/** A message the bot posted (POST /channels/{id}/messages), as first sent. */
export interface DiscordSent {
  readonly id: string;
  /** The channel it was posted to: a thread's own channel for a message in a thread. */
  readonly channelId: string;
  /** The channel the thread belongs to, when `channelId` is a thread the fake knows (addThread). */
  readonly parentId: string | undefined;
  readonly content: string;
  /** The message it replies to (message_reference). */
  readonly replyTo: string | undefined;
  /** The button under it (a CommandButton): its label and the command its press posts (custom_id). */
  readonly button?: { readonly label: string; readonly command: string };
}

/** An interaction's answer the bot POSTed over the REST API (for one that came over the Gateway). */
export interface DiscordInteractionAnswer {
  readonly interactionId: string;
  /** 4: a message (`content`), 6: acknowledged without a change. */
  readonly type: number;
  readonly content: string | undefined;
  /** Only its user sees it (flags 64). */
  readonly ephemeral: boolean;
}

/** A message as the channel shows it now: as sent, or as last edited. */
export interface DiscordShown {
  readonly id: string;
  readonly channelId: string;
  readonly parentId: string | undefined;
  readonly content: string;
}

/** An edit the fake took (PATCH /channels/{id}/messages/{id}). */
export interface DiscordEdit {
  readonly channelId: string;
  readonly messageId: string;
  readonly content: string;
}

/** A file the bot posted with a message. */
export interface DiscordFileSent {
  readonly channelId: string;
  /** The message's content; undefined when it carried the file alone. */
  readonly content: string | undefined;
  readonly filename: string;
  readonly bytes: Buffer;
}

/** A REST call the fake answered, in the order received: `POST /channels/:id/messages` and the channel it named. */
export interface DiscordCall {
  readonly route: string;
  readonly channelId: string | undefined;
  /** The HTTP status it was answered with. */
  readonly status: number;
  readonly at: number;
}

/** A message a user writes, dispatched to the bot as MESSAGE_CREATE. */
export interface DiscordUserMessage {
  /** The channel it is written in: a thread's own channel for a message in a thread (see addThread). */
  readonly channelId: string;
  readonly content: string;
  /** The server; `null` for a direct message. Default: the fake's one server. */
  readonly guildId?: string | null;
  /** In a server, the content starts with a mention of the bot (the bot answers only those). Default true. */
  readonly mentionBot?: boolean;
  readonly authorId?: string;
  readonly authorName?: string;
  /** Written by a bot (the bot itself when authorId is the bot's id). */
  readonly bot?: boolean;
}

/** A slash command a user runs, as Discord POSTs it to the Interactions Endpoint URL. */
export interface DiscordSlashCommand {
  /** The channel it is used in: a thread's own channel in a thread (see addThread). */
  readonly channelId: string;
  /** The command's name: `ask` takes its text option as the message. */
  readonly name: string;
  /** Its options' values, by option name (strings). */
  readonly options?: Readonly<Record<string, string>>;
  /** The server; `null` for a direct message. Default: the fake's one server. */
  readonly guildId?: string | null;
  readonly authorId?: string;
}

/** How failNext answers: the status, and for a 429 its wait in seconds and whether the limit is global. */
export interface DiscordFailure {
  readonly status: number;
  readonly retryAfter?: number;
  readonly global?: boolean;
  /** Discord's JSON error code (50013 Missing Permissions, say). */
  readonly code?: number;
  /** Only calls of this route (`POST /channels/:id/typing`, say); default: message posts and edits. */
  readonly route?: string;
}

export interface FakeDiscordOptions {
  /** The bot token the REST API and the Gateway take; default TEST_SECRETS' Discord token. */
  readonly token?: string;
  /** HELLO's heartbeat interval (Discord's is about 41 s). */
  readonly heartbeatIntervalMs?: number;
}

/** The bot's user as the fake names it. */
export const FAKE_DISCORD_BOT = { id: '1000000000000000001', username: 'threadline' } as const;
/** The one server the fake's channels are in. */
export const FAKE_DISCORD_GUILD = '1000000000000000002';
const APPLICATION_ID = '1000000000000000003';
const DEFAULT_TOKEN = 'discord-test-token';
/** Routes failNext fails unless told otherwise: the sends and edits the outbox retries. */
const SEND_ROUTES: ReadonlySet<string> = new Set(['POST /channels/:id/messages', 'PATCH /channels/:id/messages/:id']);
const MESSAGE_TYPE = { default: 0, reply: 19 } as const;

/**
 * A local fake of Discord: the REST API the adapter uses (GET /gateway/bot, GET /users/@me,
 * GET /channels/{id}, messages posted and edited, typing) at `apiRoot`, and the Gateway it
 * names (FakeDiscordGateway): user messages go to the bot as MESSAGE_CREATE. Answers 429 with
 * Retry-After (per route or global) and other failures on request, paces channels with
 * bucket headers when asked, and keeps nonces as `enforce_nonce` does. Point
 * THREADLINE_DISCORD_API_ROOT at `apiRoot`.
 */
export class FakeDiscord {
  /** Messages the bot posted, in order. */
  readonly sent: DiscordSent[] = [];
  readonly edits: DiscordEdit[] = [];
  /** Channels "typing…" was shown in, in order. */
  readonly typing: { readonly channelId: string }[] = [];
  readonly files: DiscordFileSent[] = [];
  /** Every REST call, in order. */
  readonly calls: DiscordCall[] = [];
  /** Answers to interactions that came over the Gateway, in order. */
  readonly interactionAnswers: DiscordInteractionAnswer[] = [];
  /** Messages by id, as last edited. */
  private readonly messages = new Map<string, DiscordShown & { readonly authorId: string }>();
  /** Threads the fake knows: their channel, by thread id. */
  private readonly threads = new Map<string, string>();
  /** Threads the bot opened from a message (POST /channels/{id}/messages/{id}/threads), in order. */
  readonly threadsStarted: { readonly channelId: string; readonly messageId: string; readonly name: string }[] = [];
  /** The buttons under the bot's messages, by message id. */
  private readonly buttons = new Map<string, { readonly label: string; readonly command: string }>();
  /** Messages already created by nonce (enforce_nonce). */
  private readonly nonces = new Map<string, string>();
  private failures: DiscordFailure[] = [];
  /** Per-channel pacing (rateLimitChannels): how many calls a window takes, and how long it lasts. */
  private pacing: { limit: number; windowMs: number } | undefined;
  private readonly windows = new Map<string, { start: number; used: number }>();
  private nextId = 1_300_000_000_000_000_000n;
  /** The application's flags: GATEWAY_MESSAGE_CONTENT_LIMITED (the intent on, in fewer than 100 servers) unless told otherwise. */
  private applicationFlags = 1 << 19;
  /** The application's signing key: Discord signs every interaction it POSTs. */
  private readonly signingKey: KeyObject;
  /** The application's public key, hex, as THREADLINE_DISCORD_PUBLIC_KEY takes it. */
  readonly publicKey: string;

  private constructor(
    private readonly server: LocalServer,
    readonly gateway: FakeDiscordGateway,
    private readonly token: string,
  ) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    this.signingKey = privateKey;
    this.publicKey = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const token = options.token ?? DEFAULT_TOKEN;
    const gateway = await FakeDiscordGateway.start({
      token,
      user: FAKE_DISCORD_BOT,
      applicationId: APPLICATION_ID,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    });
    let fake!: FakeDiscord;
    const server = await startLocalServer((request) => fake.answer(request));
    fake = new FakeDiscord(server, gateway, token);
    return fake;
  }

  /** The REST root without its version, as THREADLINE_DISCORD_API_ROOT takes it. */
  get apiRoot(): string {
    return `${this.server.origin}/api`;
  }

  get botId(): string {
    return FAKE_DISCORD_BOT.id;
  }

  /** What the Gateway saw: connections, identifies (with intents), resumes, heartbeats. */
  get gatewayStats(): FakeGatewayStats {
    return this.gateway.stats;
  }

  /** Sessions started so far: IDENTIFYs and RESUMEs taken. */
  get sessionsStarted(): number {
    const { identifies, resumes } = this.gateway.stats;
    return identifies.length + resumes.length;
  }

  /** Resolves once the bot is connected to the Gateway (identified or resumed), by a session started after the first `after`. */
  connected(after = 0, timeoutMs?: number): Promise<void> {
    return this.gateway.until(() => this.sessionsStarted > after && this.gateway.connected > 0, timeoutMs);
  }

  /** Makes `threadId` a thread of `channelId`: messages written there name the thread's channel, and GET /channels says whose thread it is. */
  addThread(threadId: string, channelId: string): void {
    this.threads.set(threadId, channelId);
  }

  /**
   * A user writes a message: dispatched to the bot's sessions as MESSAGE_CREATE (and kept for
   * their resume while a socket is cut). Returns its id. Throws when no bot session is there
   * to get it: Discord keeps nothing for a bot that is not connected.
   */
  userMessage(message: DiscordUserMessage): string {
    if (!this.gateway.hasSession) throw new Error('fake Discord: no bot session to dispatch to; await connected() first');
    const id = this.snowflake();
    const guildId = message.guildId === undefined ? FAKE_DISCORD_GUILD : message.guildId;
    const mention = guildId !== null && message.mentionBot !== false;
    const authorId = message.authorId ?? '1000000000000000100';
    this.gateway.dispatch('MESSAGE_CREATE', {
      id,
      type: MESSAGE_TYPE.default,
      channel_id: message.channelId,
      ...(guildId === null ? {} : { guild_id: guildId }),
      author: { id: authorId, username: message.authorName ?? 'ann', global_name: message.authorName ?? 'Ann', ...(message.bot ? { bot: true } : {}) },
      content: mention ? `<@${FAKE_DISCORD_BOT.id}> ${message.content}` : message.content,
      mentions: mention ? [{ id: FAKE_DISCORD_BOT.id, username: FAKE_DISCORD_BOT.username, bot: true }] : [],
      mention_everyone: false,
      timestamp: new Date().toISOString(),
    });
    return id;
  }

  /**
   * The interaction of a slash command (type 2) as Discord sends it: the channel it was used in
   * (with its type, and its parent when it is a thread the fake knows), and who used it.
   */
  slashCommand(command: DiscordSlashCommand): object {
    const guildId = command.guildId === undefined ? FAKE_DISCORD_GUILD : command.guildId;
    const parent = this.threads.get(command.channelId);
    const user = { id: command.authorId ?? '1000000000000000100', username: 'ann', global_name: 'Ann' };
    return {
      id: this.snowflake(),
      application_id: APPLICATION_ID,
      type: 2,
      token: `interaction-token-${this.snowflake()}`,
      version: 1,
      channel_id: command.channelId,
      channel: parent === undefined ? { id: command.channelId, type: guildId === null ? 1 : 0 } : { id: command.channelId, type: 11, parent_id: parent },
      ...(guildId === null ? { user } : { guild_id: guildId, member: { user } }),
      data: {
        id: '1000000000000000004',
        name: command.name,
        type: 1,
        options: Object.entries(command.options ?? {}).map(([name, value]) => ({ name, type: 3, value })),
      },
    };
  }

  /** The button under the bot's message `messageId`, as it was last sent or edited. */
  buttonOn(messageId: string): { readonly label: string; readonly command: string } | undefined {
    return this.buttons.get(messageId);
  }

  /**
   * A user's press of the button under the bot's message `messageId` (a MESSAGE_COMPONENT
   * interaction), to POST with sendDiscordInteraction (an Interactions Endpoint URL is set) or
   * to send over the Gateway with dispatchInteraction (none is).
   */
  buttonPress(messageId: string, authorId = '1000000000000000100'): object {
    const message = this.messages.get(messageId);
    const button = this.buttons.get(messageId);
    if (message === undefined || button === undefined) throw new Error(`fake Discord: no button under message ${messageId}`);
    const parent = this.threads.get(message.channelId);
    const user = { id: authorId, username: 'ann', global_name: 'Ann' };
    return {
      id: this.snowflake(),
      application_id: APPLICATION_ID,
      type: 3,
      token: `interaction-token-${this.snowflake()}`,
      version: 1,
      channel_id: message.channelId,
      channel: parent === undefined ? { id: message.channelId, type: 0 } : { id: message.channelId, type: 11, parent_id: parent },
      guild_id: FAKE_DISCORD_GUILD,
      member: { user },
      message: { id: messageId, channel_id: message.channelId },
      data: { custom_id: button.command, component_type: 2 },
    };
  }

  /** Sends an interaction (slashCommand, buttonPress) to the bot over the Gateway, as INTERACTION_CREATE: how Discord sends them when no Interactions Endpoint URL is set. */
  dispatchInteraction(interaction: object): void {
    if (this.gateway.dispatch('INTERACTION_CREATE', interaction) === 0) throw new Error('fake Discord: no bot session to dispatch to; await connected() first');
  }

  /**
   * The raw body (the interaction as JSON, or a string as it is) and headers Discord POSTs an interaction with: X-Signature-Ed25519 over
   * X-Signature-Timestamp and the body, made with the application's key (or, with
   * `forged`, another one), at `timestamp` (default now).
   */
  signInteraction(interaction: object | string, options: { readonly timestamp?: number; readonly forged?: boolean } = {}): { readonly body: string; readonly headers: Record<string, string> } {
    const body = typeof interaction === 'string' ? interaction : JSON.stringify(interaction);
    const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
    const key = options.forged ? generateKeyPairSync('ed25519').privateKey : this.signingKey;
    const signature = sign(null, Buffer.from(timestamp + body), key).toString('hex');
    return { body, headers: { 'content-type': 'application/json', 'x-signature-ed25519': signature, 'x-signature-timestamp': timestamp } };
  }

  /** The bot's messages in a channel and its threads as Discord shows them now, oldest first: edits applied, files alone left out. */
  messagesIn(channelId: string): DiscordShown[] {
    return [...this.messages.values()]
      .filter((message) => message.authorId === FAKE_DISCORD_BOT.id && message.content !== '' && (message.channelId === channelId || message.parentId === channelId))
      .map(({ id, channelId: channel, parentId, content }) => ({ id, channelId: channel, parentId, content }));
  }

  /** Deletes a message as a user could: editing it fails from now on (10008 Unknown Message). */
  deleteMessage(id: string): void {
    this.messages.delete(id);
  }

  /**
   * The next `count` calls fail with `failure.status`: a 429 carries Retry-After (seconds, as
   * `retryAfter`) and, when `global`, X-RateLimit-Global. Message posts and edits unless a
   * route is named.
   */
  failNext(count: number, failure: DiscordFailure): void {
    for (let i = 0; i < count; i++) this.failures.push(failure);
  }

  /**
   * Paces each channel as Discord does: `limit` message posts and edits per `windowMs`,
   * told to the client in X-RateLimit-* headers; a call past the limit is answered 429.
   */
  rateLimitChannels(limit: number, windowMs: number): void {
    this.pacing = { limit, windowMs };
  }

  /** Turns the Message Content Intent on or off in the application's flags (GET /applications/@me). */
  messageContentIntent(enabled: boolean): void {
    this.applicationFlags = enabled ? 1 << 19 : 0;
  }

  /** Calls answered 429, of any route. */
  get rateLimited(): number {
    return this.calls.filter((call) => call.status === 429).length;
  }

  async close(): Promise<void> {
    await Promise.all([this.server.close(), this.gateway.close()]);
  }

  private snowflake(): string {
    return String(this.nextId++);
  }

  private answer(request: LocalRequest): LocalResponse {
    const path = request.path.replace(/^\/api\/v\d+/, '');
    const segments = path.split('/').filter((segment) => segment !== '');
    const route = `${request.method} /${segments
      .map((segment, index) => (/^\d+$/.test(segment) && index > 0 ? ':id' : segments[0] === 'interactions' && index === 2 ? ':token' : segment))
      .join('/')}`;
    const channelId = segments[0] === 'channels' ? segments[1] : undefined;
    const answer = this.route(request, route, segments);
    this.calls.push({ route, channelId, status: answer.status, at: Date.now() });
    return answer;
  }

  private route(request: LocalRequest, route: string, segments: string[]): LocalResponse {
    // An interaction's token is its credential: the callback takes no bot token.
    if (segments[0] === 'interactions' && segments[3] === 'callback' && request.method === 'POST') return this.interactionCallback(segments[1]!, request);
    if (request.headers.authorization !== `Bot ${this.token}`) return error(401, 0, '401: Unauthorized');
    const failed = this.failure(route);
    if (failed !== undefined) return failed;
    const channelId = segments[1] ?? '';
    const paced = SEND_ROUTES.has(route) ? this.pace(channelId) : undefined;
    if (paced?.status === 429) return paced;
    const headers = paced?.headers ?? {};
    switch (route) {
      case 'GET /gateway/bot':
        return {
          status: 200,
          body: { url: this.gateway.url, shards: 1, session_start_limit: { total: 1000, remaining: 1000, reset_after: 86_400_000, max_concurrency: 1 } },
        };
      case 'GET /users/@me':
        return { status: 200, body: { id: FAKE_DISCORD_BOT.id, username: FAKE_DISCORD_BOT.username, bot: true, discriminator: '0', global_name: null, avatar: null } };
      case 'GET /applications/@me':
        return { status: 200, body: { id: APPLICATION_ID, name: 'threadline', flags: this.applicationFlags, bot_public: false } };
      case 'GET /channels/:id': {
        const parent = this.threads.get(channelId);
        return {
          status: 200,
          body:
            parent === undefined
              ? { id: channelId, type: 0, guild_id: FAKE_DISCORD_GUILD, name: 'general' }
              : { id: channelId, type: 11, guild_id: FAKE_DISCORD_GUILD, parent_id: parent, name: 'a thread' },
        };
      }
      case 'POST /channels/:id/typing':
        this.typing.push({ channelId });
        return { status: 204, headers };
      case 'POST /channels/:id/messages':
        return { ...this.post(channelId, request), headers };
      case 'PATCH /channels/:id/messages/:id':
        return { ...this.edit(channelId, segments[3]!, request), headers };
      case 'POST /channels/:id/messages/:id/threads': {
        // As Discord does: the thread takes the message's id, and a message starts one thread.
        const messageId = segments[3]!;
        if (this.threads.has(messageId)) return error(400, 160004, 'A thread has already been created for this message');
        this.threads.set(messageId, channelId);
        this.threadsStarted.push({ channelId, messageId, name: String(parseBody(request)['name'] ?? '') });
        return { status: 201, body: { id: messageId, type: 11, guild_id: FAKE_DISCORD_GUILD, parent_id: channelId, name: parseBody(request)['name'] } };
      }
      default:
        return error(404, 0, '404: Not Found');
    }
  }

  private interactionCallback(interactionId: string, request: LocalRequest): LocalResponse {
    const body = parseBody(request);
    const data = (body['data'] ?? {}) as { content?: unknown; flags?: unknown };
    this.interactionAnswers.push({
      interactionId,
      type: Number(body['type']),
      content: typeof data.content === 'string' ? data.content : undefined,
      ephemeral: (Number(data.flags ?? 0) & 64) !== 0,
    });
    return { status: 204 };
  }

  private post(channelId: string, request: LocalRequest): LocalResponse {
    const form = parseFormBody(request);
    const body = (typeof form['payload_json'] === 'string' ? JSON.parse(form['payload_json']) : form) as Record<string, unknown>;
    const files = Object.values(form).filter((value): value is Exclude<FormValue, string> => typeof value === 'object' && value !== null && 'bytes' in value);
    const content = typeof body['content'] === 'string' ? body['content'] : '';
    if (content.length > 2000) return error(400, 50035, 'Invalid Form Body: content must be 2000 or fewer in length.');
    if (content === '' && files.length === 0) return error(400, 50006, 'Cannot send an empty message');
    const nonce = typeof body['nonce'] === 'string' && body['enforce_nonce'] === true ? body['nonce'] : undefined;
    const again = nonce === undefined ? undefined : this.nonces.get(nonce);
    if (again !== undefined && this.messages.has(again)) return { status: 200, body: this.messageBody(this.messages.get(again)!) };
    const reference = body['message_reference'] as { message_id?: unknown } | undefined;
    const id = this.snowflake();
    const shown = { id, channelId, parentId: this.threads.get(channelId), content, authorId: FAKE_DISCORD_BOT.id };
    this.messages.set(id, shown);
    if (nonce !== undefined) this.nonces.set(nonce, id);
    const button = buttonOf(body['components']);
    if (button !== undefined) this.buttons.set(id, button);
    this.sent.push({ id, channelId, parentId: shown.parentId, content, replyTo: typeof reference?.message_id === 'string' ? reference.message_id : undefined, ...(button === undefined ? {} : { button }) });
    for (const file of files) this.files.push({ channelId, content: content === '' ? undefined : content, filename: file.filename, bytes: file.bytes });
    return { status: 200, body: this.messageBody(shown) };
  }

  private edit(channelId: string, messageId: string, request: LocalRequest): LocalResponse {
    const body = parseFormBody(request);
    const message = this.messages.get(messageId);
    if (message === undefined || message.channelId !== channelId) return error(404, 10008, 'Unknown Message');
    if (message.authorId !== FAKE_DISCORD_BOT.id) return error(403, 50005, 'Cannot edit a message authored by another user');
    const content = typeof body['content'] === 'string' ? body['content'] : message.content;
    if (content.length > 2000) return error(400, 50035, 'Invalid Form Body: content must be 2000 or fewer in length.');
    const button = buttonOf(body['components']);
    if (button !== undefined) this.buttons.set(messageId, button);
    this.messages.set(messageId, { ...message, content });
    this.edits.push({ channelId, messageId, content });
    return { status: 200, body: this.messageBody({ ...message, content }) };
  }

  private messageBody(message: DiscordShown): object {
    return {
      id: message.id,
      channel_id: message.channelId,
      type: MESSAGE_TYPE.default,
      content: message.content,
      author: { id: FAKE_DISCORD_BOT.id, username: FAKE_DISCORD_BOT.username, bot: true },
      timestamp: new Date().toISOString(),
    };
  }

  /** The first queued failure for `route`, as Discord answers it; taken off the queue. */
  private failure(route: string): LocalResponse | undefined {
    const at = this.failures.findIndex((failure) => (failure.route === undefined ? SEND_ROUTES.has(route) : failure.route === route));
    if (at < 0) return undefined;
    const failure = this.failures.splice(at, 1)[0]!;
    if (failure.status !== 429) return error(failure.status, failure.code ?? 0, failure.status >= 500 ? `${failure.status}: Internal Server Error` : 'failing on purpose');
    const retryAfter = failure.retryAfter ?? 1;
    return {
      status: 429,
      headers: {
        'retry-after': String(Math.ceil(retryAfter)),
        'x-ratelimit-scope': failure.global ? 'global' : 'user',
        ...(failure.global ? { 'x-ratelimit-global': 'true' } : {}),
      },
      body: { message: 'You are being rate limited.', retry_after: retryAfter, global: failure.global === true, code: 0 },
    };
  }

  /** Counts a call against its channel's window (rateLimitChannels): the headers to send, or a 429 past the limit. */
  private pace(channelId: string): LocalResponse | { status: 200; headers: Record<string, string> } | undefined {
    if (this.pacing === undefined) return undefined;
    const now = Date.now();
    let window = this.windows.get(channelId);
    if (window === undefined || now - window.start >= this.pacing.windowMs) {
      window = { start: now, used: 0 };
      this.windows.set(channelId, window);
    }
    const resetAfter = (window.start + this.pacing.windowMs - now) / 1000;
    if (window.used >= this.pacing.limit) {
      return {
        status: 429,
        headers: { 'retry-after': String(Math.ceil(resetAfter)), 'x-ratelimit-scope': 'user', 'x-ratelimit-bucket': `channel-${channelId}` },
        body: { message: 'You are being rate limited.', retry_after: resetAfter, global: false, code: 0 },
      };
    }
    window.used++;
    return {
      status: 200,
      headers: {
        'x-ratelimit-limit': String(this.pacing.limit),
        'x-ratelimit-remaining': String(this.pacing.limit - window.used),
        'x-ratelimit-reset-after': resetAfter.toFixed(3),
        'x-ratelimit-bucket': `channel-${channelId}`,
      },
    };
  }
}

/** The one button of a message's components, as the adapter sends a CommandButton. */
function buttonOf(components: unknown): { label: string; command: string } | undefined {
  const row = Array.isArray(components) ? (components[0] as { components?: unknown } | undefined) : undefined;
  const button = Array.isArray(row?.components) ? (row.components[0] as { label?: unknown; custom_id?: unknown } | undefined) : undefined;
  return typeof button?.label === 'string' && typeof button.custom_id === 'string' ? { label: button.label, command: button.custom_id } : undefined;
}

function error(status: number, code: number, message: string): LocalResponse {
  return { status, body: { message, code } };
}
