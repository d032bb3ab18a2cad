import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { parseFormBody, type FormValue } from './fake-telegram.js';

/** A post as the fake keeps it, in Mattermost's own field names (what its API answers). */
export interface MattermostPost {
  readonly id: string;
  readonly create_at: number;
  update_at: number;
  edit_at: number;
  delete_at: number;
  readonly user_id: string;
  readonly channel_id: string;
  readonly root_id: string;
  message: string;
  readonly type: string;
  readonly props: Record<string, unknown>;
  readonly file_ids: string[];
  readonly pending_post_id: string;
}

/** A post the bot made (POST /posts), in the order made; a repeat the server recognised by its pending_post_id is not one. */
export interface MattermostSent {
  readonly postId: string;
  readonly channelId: string;
  /** The thread's root post id; undefined for a post in the channel. */
  readonly rootId: string | undefined;
  readonly message: string;
  readonly fileIds: readonly string[];
}

/** An edit of a post (PUT /posts/{id}/patch) that took. */
export interface MattermostEdit {
  readonly postId: string;
  readonly channelId: string;
  readonly message: string;
}

/** "typing…" shown: over the websocket (`user_typing`) or REST (users/me/typing). */
export interface MattermostTyping {
  readonly channelId: string;
  /** The thread's root post id; undefined for the channel. */
  readonly parentId: string | undefined;
  readonly via: 'websocket' | 'rest';
}

/** A file uploaded (POST /files) into a channel. */
export interface MattermostFile {
  readonly fileId: string;
  readonly channelId: string;
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: Buffer;
}

/**
 * A call the fake answered: a REST call (its method, its route with ids as `:id`, the status
 * answered) or a websocket action (method `WS`, the action as route: `user_typing`…).
 */
export interface MattermostCall {
  readonly method: string;
  readonly route: string;
  readonly status: number;
}

export interface FakeMattermostOptions {
  /** The bot's access token; the API and the websocket refuse any other. */
  readonly token?: string;
}

/** A channel as the fake keeps it. */
interface FakeChannel {
  readonly id: string;
  readonly type: 'O' | 'P' | 'D' | 'G';
  readonly display_name: string;
  readonly name: string;
  readonly team_id: string;
  last_post_at: number;
}

interface Connection {
  readonly ws: WebSocket;
  authenticated: boolean;
  seq: number;
  /** Neither reads nor sends: a connection the network dropped without a word. */
  frozen?: boolean;
}

interface Failure {
  readonly status: number;
  readonly retryAfter?: number | undefined;
  /** `POST /posts`, `PUT /posts/:id/patch`…; unset, any delivery call (posts, edits, files). */
  readonly route?: string | undefined;
}

/** The calls `failNext` fails unless a route is named: what a delivery makes. */
const DELIVERY_ROUTES: ReadonlySet<string> = new Set(['POST /posts', 'PUT /posts/:id/patch', 'POST /files']);
/** The server deduplicates a create by its pending_post_id this long. */
const PENDING_POST_TTL_MS = 30_000;
/** An unauthenticated websocket is closed after this, as the server's authCheckInterval does. */
const AUTH_WINDOW_MS = 5_000;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A Mattermost id (26 lowercase letters and digits): `prefix` and `n`, padded with zeros, so tests can name one. */
export function fakeMattermostId(prefix: string, n: number): string {
  const id = `${prefix}${String(n).padStart(26 - prefix.length, '0')}`;
  if (!/^[a-z0-9]{26}$/.test(id)) throw new Error(`"${prefix}" and ${n} make no Mattermost id`);
  return id;
}

function newId(): string {
  return [...randomBytes(26)].map((byte) => ID_ALPHABET[byte % ID_ALPHABET.length]).join('');
}

/**
 * A local fake of a Mattermost server, on 127.0.0.1: the REST routes a bot uses (users/me, its
 * teams and channels, posts since a time, create and patch a post with `pending_post_id`
 * deduplication, typing, file uploads) and the websocket (`authentication_challenge`, `hello`,
 * `posted` events with `seq`, `user_typing`). Tests write as users with `userPost()`, cut the
 * websocket (`cut()`, `loseEvents()`), and fail calls (`failNext`, a 429 carrying Retry-After
 * and X-RateLimit-* as the server's rate limiter does). A channel it has not seen is made on
 * first use, the bot a member (public); a `root_id` it has not seen becomes a thread of that
 * channel; a root in another channel is refused (400), as Mattermost refuses it. Point
 * THREADLINE_MATTERMOST_URL at `url`.
 */
export class FakeMattermost {
  readonly token: string;
  readonly botUserId = fakeMattermostId('bot', 1);
  readonly botUsername = 'threadline';
  readonly teamId = fakeMattermostId('team', 1);
  /** The bot's posts, in the order made. */
  readonly sent: MattermostSent[] = [];
  readonly edits: MattermostEdit[] = [];
  readonly typing: MattermostTyping[] = [];
  readonly files: MattermostFile[] = [];
  /** Every REST call and websocket action, in order. */
  readonly calls: MattermostCall[] = [];
  /** Websocket connections that authenticated, ever. */
  connections = 0;
  private readonly posts = new Map<string, MattermostPost>();
  private readonly channels = new Map<string, FakeChannel>();
  private readonly pending = new Map<string, { postId: string; until: number }>();
  private readonly sockets = new Set<Connection>();
  private readonly connectionWaiters: { count: number; resolve: () => void }[] = [];
  private failures: Failure[] = [];
  private down = false;
  private eventsToLose = 0;
  private lastCreateAt = 0;
  private readonly wss = new WebSocketServer({ noServer: true });

  private constructor(
    private readonly server: Server,
    readonly url: string,
    token: string,
  ) {
    this.token = token;
  }

  static async start(options: FakeMattermostOptions = {}): Promise<FakeMattermost> {
    let fake!: FakeMattermost;
    const server = createServer((request, response) => fake.onRequest(request, response));
    server.on('upgrade', (request, socket, head) => fake.onUpgrade(request, socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeMattermost(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, options.token ?? 'mattermost-test-token');
    return fake;
  }

  /** Websocket connections open and authenticated now (a frozen one is no longer counted). */
  get openConnections(): number {
    return [...this.sockets].filter((connection) => connection.authenticated && connection.frozen !== true).length;
  }

  /** Resolves once `count` websocket connections have authenticated since the fake started. */
  waitForConnections(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.connections >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no websocket connection number ${count} within ${timeoutMs} ms (${this.connections} so far)`)), timeoutMs);
      this.connectionWaiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /** A channel the bot is a member of: O public, P private, D a direct message, G a group message. */
  addChannel(options: { readonly id?: string; readonly type?: FakeChannel['type']; readonly displayName?: string } = {}): string {
    const id = options.id ?? newId();
    const type = options.type ?? 'O';
    this.channels.set(id, {
      id,
      type,
      display_name: options.displayName ?? (type === 'D' ? '' : `Channel ${id.slice(0, 6)}`),
      name: type === 'D' ? `${this.botUserId}__${id}` : `channel-${id.slice(0, 8)}`,
      team_id: type === 'D' || type === 'G' ? '' : this.teamId,
      last_post_at: 0,
    });
    return id;
  }

  /**
   * A thread's root post, written a day ago by a user, silently (no event, and older than any
   * catch-up): a thread to reply in. Returns its id.
   */
  addThread(channelId: string, message = 'a thread'): string {
    return this.store({ channelId, userId: fakeMattermostId('user', 2), message, rootId: '', createAt: Date.now() - 86_400_000 }).id;
  }

  /**
   * A user's post in the channel (and thread, with `rootId`), sent to every connected websocket
   * as a `posted` event; while the websocket is cut, it is only stored (a catch-up finds it).
   */
  userPost(options: {
    readonly channelId: string;
    readonly message: string;
    readonly rootId?: string | undefined;
    readonly userId?: string;
    readonly userName?: string;
    readonly props?: Record<string, unknown>;
  }): MattermostPost {
    const post = this.store({
      channelId: options.channelId,
      userId: options.userId ?? fakeMattermostId('user', 1),
      message: options.message,
      rootId: options.rootId ?? '',
      props: options.props ?? {},
    });
    this.announce(post, `@${options.userName ?? 'ann'}`);
    return post;
  }

  /** The posts of a channel (and thread: its root and replies, when given) as it shows them now, oldest first: edits applied, deleted ones gone. */
  messagesIn(channelId: string, rootId?: string): MattermostPost[] {
    return [...this.posts.values()].filter(
      (post) => post.channel_id === channelId && post.delete_at === 0 && (rootId === undefined || post.root_id === rootId || post.id === rootId),
    );
  }

  /** Deletes a post as a user could: editing it fails from now on (404). */
  deletePost(postId: string): void {
    const post = this.posts.get(postId);
    if (post === undefined) return;
    post.delete_at = this.now();
    post.update_at = post.delete_at;
  }

  /**
   * The next `count` calls of `route` (`POST /posts`…; unset: any call a delivery makes) answer
   * `status`: a 429 as the server's rate limiter does (text "limit exceeded", Retry-After and
   * X-RateLimit-Reset of `retryAfter` seconds, default 1).
   */
  failNext(count: number, status: number, options: { readonly retryAfter?: number; readonly route?: string } = {}): void {
    for (let i = 0; i < count; i++) this.failures.push({ status, retryAfter: options.retryAfter, route: options.route });
  }

  /**
   * Cuts every websocket connection, as a network failure would (no close frame). With
   * `down`, new connections are refused (503) until `resume()`: posts written meanwhile reach
   * the bot only by a catch-up.
   */
  cut(options: { readonly down?: boolean } = {}): void {
    if (options.down === true) this.down = true;
    for (const connection of this.sockets) connection.ws.terminate();
    this.sockets.clear();
  }

  /**
   * Silences every open websocket as a network that drops a connection without a close does:
   * no event reaches it, no ping is answered, and the server does not notice.
   */
  freeze(): void {
    for (const connection of this.sockets) {
      connection.frozen = true;
      connection.ws.pause();
    }
  }

  /** Takes websocket connections again after `cut({ down: true })`. */
  resume(): void {
    this.down = false;
  }

  /** The next `count` events are lost on the way (their `seq` numbers used), as when the server drops a slow connection's events. */
  loseEvents(count: number): void {
    this.eventsToLose += count;
  }

  /** Opens a websocket and answers the authentication challenge with `token`: whether the fake took it. */
  async tryAuthenticate(token: string): Promise<boolean> {
    const { WebSocket: Client } = await import('ws');
    const ws = new Client(`${this.url.replace(/^http/, 'ws')}/api/v4/websocket`);
    return new Promise((resolve) => {
      ws.once('open', () => ws.send(JSON.stringify({ seq: 1, action: 'authentication_challenge', data: { token } })));
      ws.on('message', (raw) => {
        const frame = JSON.parse(raw.toString()) as { seq_reply?: number; status?: string };
        if (frame.seq_reply === 1) {
          ws.close();
          resolve(frame.status === 'OK');
        }
      });
      ws.once('close', () => resolve(false));
      ws.once('error', () => resolve(false));
    });
  }

  async close(): Promise<void> {
    for (const connection of this.sockets) connection.ws.terminate();
    this.sockets.clear();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Strictly increasing milliseconds, so posts keep their order. */
  private now(): number {
    this.lastCreateAt = Math.max(Date.now(), this.lastCreateAt + 1);
    return this.lastCreateAt;
  }

  private channel(id: string): FakeChannel {
    if (!this.channels.has(id)) this.addChannel({ id });
    return this.channels.get(id)!;
  }

  private store(options: {
    channelId: string;
    userId: string;
    message: string;
    rootId: string;
    props?: Record<string, unknown>;
    fileIds?: string[];
    pendingPostId?: string;
    createAt?: number;
  }): MattermostPost {
    const channel = this.channel(options.channelId);
    const at = options.createAt ?? this.now();
    if (options.rootId !== '' && !this.posts.has(options.rootId)) {
      // A root from before the fake started: a post of this channel's.
      this.posts.set(options.rootId, this.newPost({ id: options.rootId, channel_id: channel.id, user_id: fakeMattermostId('user', 2), message: '', root_id: '', create_at: at - 86_400_000 }));
    }
    const post = this.newPost({
      id: newId(),
      channel_id: channel.id,
      user_id: options.userId,
      message: options.message,
      root_id: options.rootId,
      create_at: at,
      props: options.props ?? {},
      file_ids: options.fileIds ?? [],
      pending_post_id: options.pendingPostId ?? '',
    });
    this.posts.set(post.id, post);
    channel.last_post_at = Math.max(channel.last_post_at, at);
    return post;
  }

  private newPost(fields: Pick<MattermostPost, 'id' | 'channel_id' | 'user_id' | 'message' | 'root_id' | 'create_at'> & Partial<MattermostPost>): MattermostPost {
    return { update_at: fields.create_at, edit_at: 0, delete_at: 0, type: '', props: {}, file_ids: [], pending_post_id: '', ...fields };
  }

  private announce(post: MattermostPost, senderName: string): void {
    const channel = this.channels.get(post.channel_id)!;
    this.broadcast('posted', {
      channel_display_name: channel.display_name,
      channel_name: channel.name,
      channel_type: channel.type,
      post: JSON.stringify(post),
      sender_name: senderName,
      set_online: true,
      team_id: channel.team_id,
    }, channel.id);
  }

  private broadcast(event: string, data: Record<string, unknown>, channelId: string): void {
    for (const connection of this.sockets) {
      if (!connection.authenticated || connection.frozen === true) continue;
      const seq = connection.seq++;
      if (this.eventsToLose > 0) {
        this.eventsToLose--;
        continue;
      }
      connection.ws.send(JSON.stringify({ event, data, broadcast: { omit_users: null, user_id: '', channel_id: channelId, team_id: '' }, seq }));
    }
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if ((request.url ?? '').split('?')[0] !== '/api/v4/websocket' || this.down) {
      socket.end(`HTTP/1.1 ${this.down ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.onSocket(ws));
  }

  private onSocket(ws: WebSocket): void {
    const connection: Connection = { ws, authenticated: false, seq: 0 };
    this.sockets.add(connection);
    const timer = setTimeout(() => {
      if (!connection.authenticated) ws.close();
    }, AUTH_WINDOW_MS);
    ws.on('close', () => {
      clearTimeout(timer);
      this.sockets.delete(connection);
    });
    ws.on('message', (raw) => {
      let request: { seq?: unknown; action?: unknown; data?: Record<string, unknown> };
      try {
        request = JSON.parse(raw.toString()) as typeof request;
      } catch {
        ws.close();
        return;
      }
      const reply = (status: 'OK' | 'FAIL') => {
        this.calls.push({ method: 'WS', route: String(request.action), status: status === 'OK' ? 200 : 401 });
        ws.send(JSON.stringify({ status, seq_reply: request.seq }));
      };
      if (request.action === 'authentication_challenge') {
        if (connection.authenticated) return;
        // A wrong token: the server closes the connection, without a word.
        if (request.data?.['token'] !== this.token) {
          this.calls.push({ method: 'WS', route: 'authentication_challenge', status: 401 });
          ws.close();
          return;
        }
        connection.authenticated = true;
        this.connections++;
        reply('OK');
        ws.send(JSON.stringify({ event: 'hello', data: { connection_id: newId(), server_version: 'fake' }, broadcast: { user_id: this.botUserId }, seq: connection.seq++ }));
        for (const waiter of this.connectionWaiters.filter((w) => w.count <= this.connections)) {
          this.connectionWaiters.splice(this.connectionWaiters.indexOf(waiter), 1);
          waiter.resolve();
        }
        return;
      }
      if (!connection.authenticated) {
        reply('FAIL');
        return;
      }
      if (request.action === 'user_typing') {
        const parent = request.data?.['parent_id'];
        this.typing.push({ channelId: String(request.data?.['channel_id']), parentId: typeof parent === 'string' && parent !== '' ? parent : undefined, via: 'websocket' });
      }
      reply('OK');
    });
  }

  private onRequest(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks);
      const [path, query = ''] = (request.url ?? '/').split('?') as [string, string?];
      const method = request.method ?? 'GET';
      const route = path.replace(/^\/api\/v4/, '').replace(/\/[a-z0-9]{26}(?=\/|$)/g, '/:id');
      let answer: ReturnType<FakeMattermost['answer']>;
      try {
        const params = new URLSearchParams(query);
        answer = this.answer(method, path, params, { headers: request.headers, raw, body: raw.toString('utf8'), method, path, query: params });
      } catch {
        answer = badRequest('api.context.invalid_body_param.app_error', 'The request body could not be read');
      }
      this.calls.push({ method, route, status: answer.status });
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      response.writeHead(answer.status, {
        'content-type': typeof answer.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
        date: new Date().toUTCString(),
        ...answer.headers,
      });
      response.end(text);
    });
  }

  private answer(
    method: string,
    path: string,
    query: URLSearchParams,
    request: Parameters<typeof parseFormBody>[0],
  ): { status: number; body: string | object; headers?: Record<string, string> } {
    // The SDK writes `BEARER`; the scheme is case-insensitive, the token is not.
    const [scheme, presented] = (request.headers['authorization'] ?? '').split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || presented !== this.token) {
      return { status: 401, body: { id: 'api.context.session_expired.app_error', message: 'Invalid or expired session, please login again.', status_code: 401 } };
    }
    const route = `${method} ${path.replace(/^\/api\/v4/, '').replace(/\/[a-z0-9]{26}(?=\/|$)/g, '/:id')}`;
    const at = this.failures.findIndex((failure) => (failure.route === undefined ? DELIVERY_ROUTES.has(route) : failure.route === route));
    if (at >= 0) return failureAnswer(this.failures.splice(at, 1)[0]!);
    const parts = path.split('/').slice(3);
    switch (route) {
      case 'GET /users/me':
        return { status: 200, body: { id: this.botUserId, username: this.botUsername, is_bot: true, roles: 'system_user' } };
      case 'GET /users/me/teams':
        return { status: 200, body: [{ id: this.teamId, name: 'team', display_name: 'Team' }] };
      case 'GET /users/me/teams/:id/channels':
        return { status: 200, body: [...this.channels.values()].filter((channel) => channel.team_id === '' || channel.team_id === parts[3]) };
      case 'GET /channels/:id': {
        const channel = this.channels.get(parts[1]!);
        return channel === undefined ? notFound('app.channel.get.existing.app_error') : { status: 200, body: channel };
      }
      case 'GET /channels/:id/posts':
        return { status: 200, body: this.postsSince(parts[1]!, Number(query.get('since') ?? 0)) };
      case 'POST /posts':
        return this.createPost(JSON.parse(request.body) as Record<string, unknown>);
      case 'PUT /posts/:id/patch':
        return this.patchPost(parts[1]!, JSON.parse(request.body) as Record<string, unknown>);
      case 'POST /users/me/typing': {
        const body = JSON.parse(request.body) as { channel_id?: string; parent_id?: string };
        this.typing.push({ channelId: String(body.channel_id), parentId: body.parent_id === '' ? undefined : body.parent_id, via: 'rest' });
        return { status: 200, body: { status: 'OK' } };
      }
      case 'POST /files':
        return this.upload(parseFormBody(request));
      default:
        return notFound('api.context.404.app_error');
    }
  }

  private postsSince(channelId: string, since: number) {
    // Mattermost's `since`: every post changed after it (created, edited or deleted), at most 1,000.
    const posts = [...this.posts.values()].filter((post) => post.channel_id === channelId && Math.max(post.update_at, post.edit_at, post.delete_at) > since).slice(-1_000);
    return {
      order: posts.map((post) => post.id).reverse(),
      posts: Object.fromEntries(posts.map((post) => [post.id, post])),
      next_post_id: '',
      prev_post_id: '',
      first_inaccessible_post_time: 0,
    };
  }

  private createPost(body: Record<string, unknown>) {
    const channelId = body['channel_id'];
    const message = body['message'];
    const rootId = body['root_id'] ?? '';
    const fileIds = Array.isArray(body['file_ids']) ? (body['file_ids'] as unknown[]).map(String) : [];
    if (typeof channelId !== 'string' || !/^[a-z0-9]{26}$/.test(channelId)) return badRequest('api.context.invalid_body_param.app_error', 'Invalid channel_id');
    if (typeof message !== 'string' || (message === '' && fileIds.length === 0)) return badRequest('model.post.is_valid.msg.app_error', 'Invalid message');
    if (typeof rootId !== 'string' || (rootId !== '' && !/^[a-z0-9]{26}$/.test(rootId))) return badRequest('model.post.is_valid.root_id.app_error', 'Invalid root_id');
    if ([...message].length > 16_383) return badRequest('model.post.is_valid.message_length.app_error', 'Invalid Message property length');
    const root = rootId === '' ? undefined : this.posts.get(rootId);
    if (root !== undefined && (root.channel_id !== channelId || root.root_id !== '' || root.delete_at !== 0)) {
      return badRequest('api.post.create_post.root_id.app_error', 'Invalid RootId parameter');
    }
    const pendingId = typeof body['pending_post_id'] === 'string' ? body['pending_post_id'] : '';
    const seen = pendingId === '' ? undefined : this.pending.get(pendingId);
    if (seen !== undefined && seen.until > Date.now()) return { status: 201, body: { ...this.posts.get(seen.postId)!, pending_post_id: '' } };
    const post = this.store({ channelId, userId: this.botUserId, message, rootId, props: { from_bot: 'true' }, fileIds, pendingPostId: pendingId });
    if (pendingId !== '') this.pending.set(pendingId, { postId: post.id, until: Date.now() + PENDING_POST_TTL_MS });
    this.sent.push({ postId: post.id, channelId, rootId: rootId === '' ? undefined : rootId, message, fileIds });
    // The bot gets its own posts as events too, as from the server.
    this.announce(post, `@${this.botUsername}`);
    return { status: 201, body: post };
  }

  private patchPost(postId: string, body: Record<string, unknown>) {
    const post = this.posts.get(postId);
    if (post === undefined || post.delete_at !== 0) return notFound('app.post.get.app_error');
    if (post.user_id !== this.botUserId) return { status: 403, body: { id: 'api.context.permissions.app_error', message: 'You do not have the appropriate permissions.', status_code: 403 } };
    if (typeof body['message'] !== 'string') return badRequest('api.context.invalid_body_param.app_error', 'Invalid message');
    post.message = body['message'];
    post.edit_at = this.now();
    post.update_at = post.edit_at;
    this.edits.push({ postId, channelId: post.channel_id, message: post.message });
    return { status: 200, body: post };
  }

  private upload(form: Record<string, unknown>) {
    const channelId = form['channel_id'];
    const file = form['files'] as FormValue | undefined;
    if (typeof channelId !== 'string' || typeof file !== 'object' || file === null) return badRequest('api.file.upload_file.incorrect_number_of_files.app_error', 'Unable to upload files');
    const fileId = newId();
    this.files.push({ fileId, channelId, filename: file.filename, contentType: file.contentType, bytes: file.bytes });
    return { status: 201, body: { file_infos: [{ id: fileId, name: file.filename, size: file.bytes.length, mime_type: file.contentType, channel_id: channelId }], client_ids: [] } };
  }
}

function failureAnswer(failure: Failure) {
  if (failure.status === 429) {
    const seconds = String(failure.retryAfter ?? 1);
    // As the server's rate limiter answers: plain text, the wait in its headers.
    return {
      status: 429,
      body: 'limit exceeded\n',
      headers: { 'retry-after': seconds, 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': seconds },
    };
  }
  return { status: failure.status, body: { id: 'fake.failing_on_purpose', message: 'failing on purpose', status_code: failure.status } };
}

function badRequest(id: string, message: string) {
  return { status: 400, body: { id, message, status_code: 400 } };
}

function notFound(id: string) {
  return { status: 404, body: { id, message: 'Not found', status_code: 404 } };
}
