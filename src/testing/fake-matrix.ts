import { randomBytes } from 'node:crypto';
import { startLocalServer, type LocalRequest, type LocalResponse, type LocalServer } from './local-server.js';

/** The server name of the fake's ids: `!room:fake.local`, `@ann:fake.local`. */
export const FAKE_MATRIX_SERVER = 'fake.local';

/** A text message the bot sent (an `m.room.message` that is no edit and no file). */
export interface MatrixSent {
  readonly roomId: string;
  readonly eventId: string;
  /** The transaction id of its PUT: the same one twice sends once. */
  readonly txnId: string;
  readonly msgtype: string;
  readonly body: string;
  /** The thread's root, from an `m.thread` relation. */
  readonly threadRoot: string | undefined;
  /** The event of `m.in_reply_to`. */
  readonly replyTo: string | undefined;
  /** The relation's `is_falling_back`, when it has one. */
  readonly isFallingBack: boolean | undefined;
  /** The event's whole content, as sent. */
  readonly content: Readonly<Record<string, unknown>>;
}

/** An edit (`m.replace`) the bot sent; `applied` when it was valid (the original is the bot's, unredacted, no edit itself). */
export interface MatrixEdit {
  readonly roomId: string;
  readonly eventId: string;
  readonly replaces: string;
  readonly body: string;
  readonly applied: boolean;
}

/** A file the bot sent: its upload and the event that shares it. */
export interface MatrixFileSent {
  readonly roomId: string;
  readonly threadRoot: string | undefined;
  readonly msgtype: string;
  readonly filename: string;
  /** The body, which is the caption when it differs from the filename. */
  readonly body: string;
  readonly contentType: string;
  readonly bytes: Buffer;
}

/** A typing notification the bot sent. */
export interface MatrixTyping {
  readonly roomId: string;
  readonly userId: string;
  readonly typing: boolean;
  readonly timeoutMs: number | undefined;
}

/** A text message as the room shows it now: edits applied, redacted ones gone. */
export interface MatrixShown {
  readonly roomId: string;
  readonly eventId: string;
  readonly sender: string;
  readonly threadRoot: string | undefined;
  readonly msgtype: string;
  readonly body: string;
}

/** What the fake's endpoints are called in `calls` and `failNext`. */
export type MatrixEndpoint = 'whoami' | 'joined_rooms' | 'sync' | 'messages' | 'send' | 'typing' | 'event' | 'upload';

/** A call the fake answered (whoami aside), in the order received. */
export interface MatrixCall {
  readonly endpoint: MatrixEndpoint;
  readonly roomId: string | undefined;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
}

/** How the next calls fail. */
export interface MatrixFailure {
  /** Default 429. */
  readonly status?: number;
  /** Default `M_LIMIT_EXCEEDED` for a 429, `M_UNKNOWN` otherwise. */
  readonly errcode?: string;
  /** A 429's `retry_after_ms` in the body (default 1000). */
  readonly retryAfterMs?: number;
  /** Also a `Retry-After` header, in seconds (Matrix 1.10). */
  readonly retryAfterSeconds?: number;
  /** The endpoint that fails: default `send` or `upload`, whichever is called first. */
  readonly endpoint?: MatrixEndpoint;
  /** A send is done, and then its answer is this failure: as when the answer is lost on the way back. */
  readonly afterSending?: boolean;
}

export interface FakeMatrixOptions {
  /** The token the fake accepts; default `fake-matrix-token`. */
  readonly accessToken?: string;
  /** The bot's user id; default `@threadline:fake.local`. */
  readonly userId?: string;
}

/** One change of the event stream: an event in a room, or an invite to one. */
interface StreamEntry {
  readonly position: number;
  readonly roomId: string;
  readonly event?: StoredEvent;
  readonly invite?: true;
}

interface StoredEvent {
  readonly event_id: string;
  readonly type: string;
  readonly sender: string;
  readonly room_id: string;
  readonly origin_server_ts: number;
  readonly content: Record<string, unknown>;
  readonly state_key?: string;
  unsigned?: Record<string, unknown>;
}

/** Synapse's timeline length when a filter names none. */
const DEFAULT_TIMELINE_LIMIT = 10;

/**
 * A local fake of a Matrix homeserver's client-server API, enough for a bot: whoami, joined rooms, /sync
 * (since tokens, long polling, per-room timelines cut at the filter's limit and marked
 * `limited`, invites), /messages back through a gap, sends with transaction ids (edits applied
 * as clients apply them), typing, one event, uploads; 429 M_LIMIT_EXCEEDED (and other failures)
 * on request. Every request needs the access token. Tests write into rooms and threads as
 * users with `postMessage`, and an end-to-end encrypted event with `postEncrypted`. Point
 * THREADLINE_MATRIX_HOMESERVER_URL at `homeserverUrl`.
 */
export class FakeMatrix {
  readonly accessToken: string;
  readonly userId: string;
  readonly sent: MatrixSent[] = [];
  readonly edits: MatrixEdit[] = [];
  readonly files: MatrixFileSent[] = [];
  readonly typing: MatrixTyping[] = [];
  /** Every call but whoami, in order. */
  readonly calls: MatrixCall[] = [];
  /** The calls failed on purpose (failNext), in order. */
  readonly failedCalls: MatrixCall[] = [];
  /** /sync calls that carried a `since` token (the initial sync does not). */
  sinceSyncs = 0;
  private readonly stream: StreamEntry[] = [];
  private readonly events = new Map<string, StoredEvent>();
  private readonly redacted = new Set<string>();
  /** The latest valid edit of each edited event. */
  private readonly latestEdit = new Map<string, Record<string, unknown>>();
  private readonly transactions = new Map<string, string>();
  private readonly uploads = new Map<string, { bytes: Buffer; contentType: string; filename: string }>();
  private failures: MatrixFailure[] = [];
  private wakeSyncs: (() => void)[] = [];
  private syncWaiters: { count: number; resolve: () => void }[] = [];
  private nextId = 1;
  private closed = false;

  private constructor(
    private readonly server: LocalServer,
    options: FakeMatrixOptions,
  ) {
    this.accessToken = options.accessToken ?? 'fake-matrix-token';
    this.userId = options.userId ?? `@threadline:${FAKE_MATRIX_SERVER}`;
  }

  static async start(options: FakeMatrixOptions = {}): Promise<FakeMatrix> {
    let fake!: FakeMatrix;
    const server = await startLocalServer((request) => fake.answer(request));
    fake = new FakeMatrix(server, options);
    return fake;
  }

  get homeserverUrl(): string {
    return this.server.origin;
  }

  /**
   * Writes a text message into `roomId` as `sender` (default `@ann:fake.local`), in the thread
   * of `threadRoot` when given, replying to `replyTo` when given; the bot is in every room
   * written to. Answers the event id.
   */
  postMessage(roomId: string, text: string, options: { readonly sender?: string; readonly threadRoot?: string | undefined; readonly replyTo?: string; readonly msgtype?: string } = {}): string {
    const relation =
      options.threadRoot !== undefined
        ? { rel_type: 'm.thread', event_id: options.threadRoot, is_falling_back: options.replyTo === undefined, 'm.in_reply_to': { event_id: options.replyTo ?? options.threadRoot } }
        : options.replyTo !== undefined
          ? { 'm.in_reply_to': { event_id: options.replyTo } }
          : undefined;
    const content = { msgtype: options.msgtype ?? 'm.text', body: text, ...(relation === undefined ? {} : { 'm.relates_to': relation }) };
    return this.postEvent(roomId, { type: 'm.room.message', content, sender: options.sender ?? `@ann:${FAKE_MATRIX_SERVER}` });
  }

  /** Writes an end-to-end encrypted event (Megolm ciphertext nobody here can read) into `roomId`; answers its id. */
  postEncrypted(roomId: string, sender = `@ann:${FAKE_MATRIX_SERVER}`): string {
    const content = { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: randomBytes(48).toString('base64'), device_id: 'ANNDEVICE', sender_key: randomBytes(32).toString('base64'), session_id: 'session-1' };
    return this.postEvent(roomId, { type: 'm.room.encrypted', content, sender });
  }

  /** Writes any event into `roomId`; answers its id. */
  postEvent(roomId: string, event: { readonly type: string; readonly content: Record<string, unknown>; readonly sender: string; readonly stateKey?: string }): string {
    const stored: StoredEvent = {
      event_id: `$e${this.nextId++}_${randomBytes(6).toString('base64url')}`,
      type: event.type,
      sender: event.sender,
      room_id: roomId,
      origin_server_ts: Date.now(),
      content: event.content,
      ...(event.stateKey === undefined ? {} : { state_key: event.stateKey }),
    };
    this.events.set(stored.event_id, stored);
    this.append({ roomId, event: stored });
    return stored.event_id;
  }

  /** Invites the bot into `roomId`: the next sync lists it under `rooms.invite`. */
  invite(roomId: string): void {
    this.append({ roomId, invite: true });
  }

  /** Redacts an event as a user could: its content is gone, and edits of it no longer apply. */
  redact(eventId: string): void {
    this.redacted.add(eventId);
  }

  /** The text messages of a room (and thread, when given) as it shows them now, oldest first: edits applied, redacted ones gone. */
  messagesIn(roomId: string, threadRoot?: string): MatrixShown[] {
    return [...this.events.values()]
      .filter((event) => event.room_id === roomId && event.type === 'm.room.message' && !this.redacted.has(event.event_id))
      .filter((event) => relationOf(event.content)?.['rel_type'] !== 'm.replace' && TEXT_TYPES.has(String(event.content['msgtype'])))
      .map((event) => {
        const content = this.latestEdit.get(event.event_id) ?? event.content;
        return { roomId, eventId: event.event_id, sender: event.sender, threadRoot: threadOf(event.content), msgtype: String(content['msgtype']), body: String(content['body']) };
      })
      .filter((shown) => threadRoot === undefined || shown.threadRoot === threadRoot);
  }

  /** The next `count` calls (of `failure.endpoint`; default the first send or upload) fail as said (default 429 M_LIMIT_EXCEEDED after 1 s). */
  failNext(count: number, failure: MatrixFailure = {}): void {
    for (let i = 0; i < count; i++) this.failures.push(failure);
  }

  /**
   * Resolves once `count` /sync calls with a since token have arrived in all (the bot reads on
   * from a stored token); rejects after `timeoutMs`.
   */
  waitForSinceSyncs(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.sinceSyncs >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`No /sync with a since token came within ${timeoutMs} ms (${this.sinceSyncs} of ${count})`)), timeoutMs);
      this.syncWaiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake();
    await this.server.close();
  }

  private append(entry: Omit<StreamEntry, 'position'>): void {
    this.stream.push({ ...entry, position: this.stream.length + 1 });
    this.wake();
  }

  private wake(): void {
    for (const wake of this.wakeSyncs.splice(0)) wake();
  }

  private async answer(request: LocalRequest): Promise<LocalResponse> {
    const route = routeOf(request);
    if (route === undefined) return matrixError(404, 'M_UNRECOGNIZED', 'Unrecognized request');
    const presented = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (presented === undefined) return matrixError(401, 'M_MISSING_TOKEN', 'Missing access token');
    if (presented !== this.accessToken) return matrixError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
    const call = { endpoint: route.endpoint, roomId: route.roomId, at: Date.now() };
    if (route.endpoint !== 'whoami') this.calls.push(call);
    const at = this.failures.findIndex((failure) => (failure.endpoint === undefined ? route.endpoint === 'send' || route.endpoint === 'upload' : failure.endpoint === route.endpoint));
    if (at >= 0) {
      const failure = this.failures.splice(at, 1)[0]!;
      this.failedCalls.push(call);
      if (failure.afterSending === true && route.endpoint === 'send') this.send(route.roomId!, route.eventType!, route.txnId!, request);
      return failureAnswer(failure);
    }
    switch (route.endpoint) {
      case 'whoami':
        return ok({ user_id: this.userId, device_id: 'FAKEDEVICE', is_guest: false });
      case 'joined_rooms':
        return ok({ joined_rooms: [...new Set(this.stream.filter((entry) => entry.invite !== true).map((entry) => entry.roomId))] });
      case 'sync':
        return this.sync(request.query);
      case 'messages':
        return this.roomMessages(route.roomId!, request.query);
      case 'send':
        return this.send(route.roomId!, route.eventType!, route.txnId!, request);
      case 'typing':
        return this.setTyping(route.roomId!, route.userId!, request);
      case 'event':
        return this.event(route.roomId!, route.eventId!);
      case 'upload':
        return this.upload(request);
    }
  }

  private async sync(query: URLSearchParams): Promise<LocalResponse> {
    const since = query.get('since');
    const from = since === null ? 0 : positionOf(since);
    if (from === undefined) return matrixError(400, 'M_INVALID_PARAM', 'Unknown since token');
    if (since !== null) {
      this.sinceSyncs++;
      for (const waiter of this.syncWaiters.filter((candidate) => candidate.count <= this.sinceSyncs)) waiter.resolve();
      this.syncWaiters = this.syncWaiters.filter((candidate) => candidate.count > this.sinceSyncs);
    }
    const filter = parseJson(query.get('filter') ?? '{}');
    const timeline = (record(record(filter)?.['room'])?.['timeline'] ?? {}) as { limit?: unknown; types?: unknown };
    const limit = typeof timeline.limit === 'number' && timeline.limit >= 0 ? timeline.limit : DEFAULT_TIMELINE_LIMIT;
    const types = Array.isArray(timeline.types) ? new Set(timeline.types.map(String)) : undefined;
    const timeoutMs = Number(query.get('timeout') ?? 0);
    if (since !== null && this.stream.length <= from && timeoutMs > 0 && !this.closed) {
      // Long polling: held until something happens or the timeout passes.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.wakeSyncs.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const entries = this.stream.slice(from);
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    for (const roomId of new Set(entries.map((entry) => entry.roomId))) {
      if (entries.some((entry) => entry.roomId === roomId && entry.invite)) invite[roomId] = { invite_state: { events: [] } };
      // The initial sync shows each room's latest events; later ones, what happened since.
      const candidates = (since === null ? this.stream : entries).filter(
        (entry) => entry.roomId === roomId && entry.event !== undefined && (types === undefined || types.has(entry.event.type)),
      );
      if (candidates.length === 0) continue;
      const shown = candidates.slice(Math.max(0, candidates.length - limit));
      join[roomId] = {
        timeline: {
          events: shown.map((entry) => this.served(entry.event!)),
          limited: shown.length < candidates.length,
          prev_batch: tokenOf(shown.length === 0 ? this.stream.length : shown[0]!.position - 1),
        },
      };
    }
    return ok({ next_batch: tokenOf(this.stream.length), rooms: { join, invite, leave: {} } });
  }

  /** /messages backwards from `from` down to `to`, newest first, as a gap is read. */
  private roomMessages(roomId: string, query: URLSearchParams): LocalResponse {
    const from = positionOf(query.get('from') ?? '');
    const to = query.get('to') === null ? 0 : positionOf(query.get('to')!);
    if (from === undefined || to === undefined || query.get('dir') !== 'b') return matrixError(400, 'M_INVALID_PARAM', 'from, to and dir=b are what this fake reads');
    const limit = Math.max(1, Number(query.get('limit') ?? 10));
    const filter = record(parseJson(query.get('filter') ?? '{}')) as { types?: unknown } | undefined;
    const types = Array.isArray(filter?.types) ? new Set(filter.types.map(String)) : undefined;
    const inRange = this.stream
      .filter((entry) => entry.roomId === roomId && entry.event !== undefined && entry.position > to && entry.position <= from)
      .filter((entry) => types === undefined || types.has(entry.event!.type))
      .reverse();
    const page = inRange.slice(0, limit);
    const more = inRange.length > limit;
    return ok({ start: tokenOf(from), chunk: page.map((entry) => this.served(entry.event!)), ...(more ? { end: tokenOf(page[page.length - 1]!.position - 1) } : {}) });
  }

  private send(roomId: string, eventType: string, txnId: string, request: LocalRequest): LocalResponse {
    const known = this.transactions.get(txnId);
    if (known !== undefined) return ok({ event_id: known });
    const content = record(parseJson(request.body));
    if (content === undefined) return matrixError(400, 'M_NOT_JSON', 'Content not JSON');
    const eventId = this.postEvent(roomId, { type: eventType, content, sender: this.userId });
    this.transactions.set(txnId, eventId);
    const relation = relationOf(content);
    if (eventType !== 'm.room.message') return ok({ event_id: eventId });
    if (relation?.['rel_type'] === 'm.replace') {
      this.applyEdit(roomId, eventId, content);
    } else if (typeof content['url'] === 'string') {
      const upload = this.uploads.get(content['url']);
      this.files.push({
        roomId,
        threadRoot: threadOf(content),
        msgtype: String(content['msgtype']),
        filename: String(content['filename'] ?? content['body']),
        body: String(content['body']),
        contentType: upload?.contentType ?? 'application/octet-stream',
        bytes: upload?.bytes ?? Buffer.alloc(0),
      });
    } else {
      const inReplyTo = record(relation?.['m.in_reply_to'])?.['event_id'];
      this.sent.push({
        roomId,
        eventId,
        txnId,
        msgtype: String(content['msgtype']),
        body: String(content['body']),
        threadRoot: threadOf(content),
        replyTo: typeof inReplyTo === 'string' ? inReplyTo : undefined,
        isFallingBack: typeof relation?.['is_falling_back'] === 'boolean' ? relation['is_falling_back'] : undefined,
        content,
      });
    }
    return ok({ event_id: eventId });
  }

  /** Applies an edit as clients do, only when valid: same room and sender, original not redacted and no edit itself. */
  private applyEdit(roomId: string, eventId: string, content: Record<string, unknown>): void {
    const replaces = String(relationOf(content)?.['event_id']);
    const original = this.events.get(replaces);
    const newContent = record(content['m.new_content']);
    const applied =
      original !== undefined &&
      original.room_id === roomId &&
      original.sender === this.userId &&
      !this.redacted.has(replaces) &&
      relationOf(original.content)?.['rel_type'] !== 'm.replace' &&
      newContent !== undefined;
    if (applied) this.latestEdit.set(replaces, { ...newContent, ...(original.content['m.relates_to'] === undefined ? {} : { 'm.relates_to': original.content['m.relates_to'] }) });
    this.edits.push({ roomId, eventId, replaces, body: String(newContent?.['body'] ?? content['body']), applied });
  }

  private setTyping(roomId: string, userId: string, request: LocalRequest): LocalResponse {
    if (userId !== this.userId) return matrixError(403, 'M_FORBIDDEN', 'Cannot set another user\'s typing state');
    const body = record(parseJson(request.body));
    if (typeof body?.['typing'] !== 'boolean') return matrixError(400, 'M_BAD_JSON', 'typing is required');
    this.typing.push({ roomId, userId, typing: body['typing'], timeoutMs: typeof body['timeout'] === 'number' ? body['timeout'] : undefined });
    return ok({});
  }

  private event(roomId: string, eventId: string): LocalResponse {
    const event = this.events.get(eventId);
    if (event === undefined || event.room_id !== roomId) return matrixError(404, 'M_NOT_FOUND', 'Event not found');
    return ok(this.served(event));
  }

  private upload(request: LocalRequest): LocalResponse {
    const uri = `mxc://${FAKE_MATRIX_SERVER}/m${this.nextId++}`;
    this.uploads.set(uri, { bytes: request.raw, contentType: request.headers['content-type'] ?? 'application/octet-stream', filename: request.query.get('filename') ?? '' });
    return ok({ content_uri: uri });
  }

  /** An event as a client gets it: a redacted one with empty content. */
  private served(event: StoredEvent): Record<string, unknown> {
    if (!this.redacted.has(event.event_id)) return { ...event };
    return { ...event, content: {}, unsigned: { ...event.unsigned, redacted_because: { type: 'm.room.redaction', sender: `@ann:${FAKE_MATRIX_SERVER}` } } };
  }
}

const TEXT_TYPES: ReadonlySet<string> = new Set(['m.text', 'm.notice', 'm.emote']);

interface Route {
  readonly endpoint: MatrixEndpoint;
  readonly roomId?: string;
  readonly eventId?: string;
  readonly eventType?: string;
  readonly txnId?: string;
  readonly userId?: string;
}

/** The endpoint a request names, its path parameters decoded. */
function routeOf(request: LocalRequest): Route | undefined {
  const { method, path } = request;
  const parts = path.split('/').map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  if (method === 'POST' && path === '/_matrix/media/v3/upload') return { endpoint: 'upload' };
  if (parts[1] !== '_matrix' || parts[2] !== 'client' || parts[3] !== 'v3') return undefined;
  const rest = parts.slice(4);
  if (method === 'GET' && rest.join('/') === 'account/whoami') return { endpoint: 'whoami' };
  if (method === 'GET' && rest.join('/') === 'sync') return { endpoint: 'sync' };
  if (method === 'GET' && rest.join('/') === 'joined_rooms') return { endpoint: 'joined_rooms' };
  if (rest[0] !== 'rooms' || rest[1] === undefined) return undefined;
  const roomId = rest[1];
  if (method === 'GET' && rest[2] === 'messages' && rest.length === 3) return { endpoint: 'messages', roomId };
  if (method === 'PUT' && rest[2] === 'send' && rest.length === 5) return { endpoint: 'send', roomId, eventType: rest[3]!, txnId: rest[4]! };
  if (method === 'PUT' && rest[2] === 'typing' && rest.length === 4) return { endpoint: 'typing', roomId, userId: rest[3]! };
  if (method === 'GET' && rest[2] === 'event' && rest.length === 4) return { endpoint: 'event', roomId, eventId: rest[3]! };
  return undefined;
}

function relationOf(content: Record<string, unknown>): Record<string, unknown> | undefined {
  return record(content['m.relates_to']);
}

function threadOf(content: Record<string, unknown>): string | undefined {
  const relation = relationOf(content);
  return relation?.['rel_type'] === 'm.thread' && typeof relation['event_id'] === 'string' ? relation['event_id'] : undefined;
}

/** The fake's stream tokens: `s<position>`, the stream read up to that entry. */
function tokenOf(position: number): string {
  return `s${position}`;
}

function positionOf(token: string): number | undefined {
  const match = /^s(\d+)$/.exec(token);
  return match === null ? undefined : Number(match[1]);
}

function failureAnswer(failure: MatrixFailure): LocalResponse {
  const status = failure.status ?? 429;
  const errcode = failure.errcode ?? (status === 429 ? 'M_LIMIT_EXCEEDED' : 'M_UNKNOWN');
  const answer = matrixError(status, errcode, 'failing on purpose', status === 429 ? { retry_after_ms: failure.retryAfterMs ?? 1_000 } : {});
  return failure.retryAfterSeconds === undefined ? answer : { ...answer, headers: { 'retry-after': String(failure.retryAfterSeconds) } };
}

function matrixError(status: number, errcode: string, error: string, extra: Record<string, unknown> = {}): LocalResponse {
  return { status, body: { errcode, error, ...extra } };
}

function ok(body: object): LocalResponse {
  return { status: 200, body };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
