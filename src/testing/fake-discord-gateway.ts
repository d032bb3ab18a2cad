import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** Gateway opcodes the fake speaks (Discord's numbering). */
const OP = { dispatch: 0, heartbeat: 1, identify: 2, resume: 6, invalidSession: 9, hello: 10, heartbeatAck: 11 } as const;
/** Close codes after which Discord forgets the session: a client that meant to leave. */
const FORGETTING_CLOSES: ReadonlySet<number> = new Set([1000, 1001]);
const AUTHENTICATION_FAILED = 4004;
/** Dispatches a session keeps for replay on resume. */
const REPLAY_KEPT = 10_000;

/** One identified session: its sequence, what it was sent, and its socket while connected. */
interface GatewaySession {
  readonly id: string;
  seq: number;
  readonly events: { readonly s: number; readonly t: string; readonly d: unknown }[];
  socket: WebSocket | undefined;
  /** Forgotten: closed with 1000/1001 or invalidated; a RESUME of it is refused. */
  forgotten: boolean;
}

/** What the fake Gateway saw a client do, for tests to assert on. */
export interface FakeGatewayStats {
  /** Websocket connections opened. */
  readonly connections: number;
  /** IDENTIFYs taken (new sessions), with the intents asked for. */
  readonly identifies: readonly { readonly intents: number }[];
  /** RESUMEs taken, with the sequence the client gave. */
  readonly resumes: readonly { readonly seq: number }[];
  /** Heartbeats answered. */
  readonly heartbeats: number;
  /** The most sessions connected at once: more than 1 means every message went to each. */
  readonly mostConnected: number;
}

export interface FakeGatewayOptions {
  readonly token: string;
  /** The bot user READY names. */
  readonly user: { readonly id: string; readonly username: string };
  readonly applicationId: string;
  readonly heartbeatIntervalMs: number;
}

/**
 * The websocket half of a fake Discord: HELLO, IDENTIFY answered with READY, heartbeats with
 * their ACK, dispatches numbered per session, RESUME answered with the dispatches the session
 * missed and RESUMED (or INVALID_SESSION for one it forgot), a socket that can be cut. Every
 * connected session gets every dispatch, as Discord does for a bot connected twice.
 */
export class FakeDiscordGateway {
  private readonly sessions = new Map<string, GatewaySession>();
  private readonly changes = new EventEmitter();
  private counts = { connections: 0, heartbeats: 0, mostConnected: 0 };
  private readonly identified: { intents: number }[] = [];
  private readonly resumed: { seq: number }[] = [];

  private constructor(
    private readonly server: WebSocketServer,
    private readonly options: FakeGatewayOptions,
  ) {
    this.changes.setMaxListeners(0);
    server.on('connection', (socket) => this.accept(socket));
  }

  static async start(options: FakeGatewayOptions): Promise<FakeDiscordGateway> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    return new FakeDiscordGateway(server, options);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get stats(): FakeGatewayStats {
    return { ...this.counts, identifies: [...this.identified], resumes: [...this.resumed] };
  }

  /** Sessions connected now (identified or resumed, socket open). */
  get connected(): number {
    return [...this.sessions.values()].filter((session) => session.socket !== undefined).length;
  }

  /** Whether a session is there to dispatch to: connected, or cut and still resumable. */
  get hasSession(): boolean {
    return [...this.sessions.values()].some((session) => !session.forgotten);
  }

  /** Resolves once `check` holds, re-checked whenever a session connects, resumes or drops. */
  async until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
    if (check()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.changes.off('change', onChange);
        reject(new Error(`fake Discord Gateway: condition not met within ${timeoutMs} ms`));
      }, timeoutMs);
      const onChange = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.changes.off('change', onChange);
        resolve();
      };
      this.changes.on('change', onChange);
    });
  }

  /** Dispatches event `t` to every session not forgotten: sent now when connected, kept for its resume otherwise. */
  dispatch(t: string, d: unknown): number {
    let sessions = 0;
    for (const session of this.sessions.values()) {
      if (session.forgotten) continue;
      this.send(session, t, d);
      sessions++;
    }
    return sessions;
  }

  /**
   * Drops every connected socket without a close frame (the client sees 1006), as a network
   * cut does; the sessions stay resumable. With `replayOverlap`, the resume of each replays
   * that many dispatches the client had already had, as a replay from an older sequence would.
   */
  cut(options: { readonly replayOverlap?: number } = {}): void {
    this.overlap = options.replayOverlap ?? 0;
    for (const session of this.sessions.values()) session.socket?.terminate();
  }

  /** Sends INVALID_SESSION (not resumable) to every connected session and forgets them. */
  invalidateSessions(): void {
    for (const session of this.sessions.values()) {
      session.forgotten = true;
      session.socket?.send(JSON.stringify({ op: OP.invalidSession, d: false }));
    }
  }

  async close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Replayed dispatches a resume adds before the client's sequence (see cut). */
  private overlap = 0;

  private accept(socket: WebSocket): void {
    this.counts.connections++;
    let session: GatewaySession | undefined;
    socket.send(JSON.stringify({ op: OP.hello, d: { heartbeat_interval: this.options.heartbeatIntervalMs } }));
    socket.on('message', (raw) => {
      let payload: { op?: unknown; d?: Record<string, unknown> | null };
      try {
        payload = JSON.parse(String(raw)) as typeof payload;
      } catch {
        socket.close(4002, 'Error while decoding payload');
        return;
      }
      switch (payload.op) {
        case OP.heartbeat:
          this.counts.heartbeats++;
          socket.send(JSON.stringify({ op: OP.heartbeatAck }));
          return;
        case OP.identify:
          if (payload.d?.['token'] !== this.options.token) {
            socket.close(AUTHENTICATION_FAILED, 'Authentication failed');
            return;
          }
          session = this.identify(socket, Number(payload.d?.['intents']));
          return;
        case OP.resume: {
          const resumed = this.resume(socket, payload.d ?? {});
          if (resumed === undefined) socket.send(JSON.stringify({ op: OP.invalidSession, d: false }));
          session = resumed ?? session;
          return;
        }
        default:
          return;
      }
    });
    socket.on('close', (code) => {
      if (session !== undefined && session.socket === socket) {
        session.socket = undefined;
        if (FORGETTING_CLOSES.has(code)) session.forgotten = true;
      }
      this.changes.emit('change');
    });
  }

  private identify(socket: WebSocket, intents: number): GatewaySession {
    this.identified.push({ intents });
    const session: GatewaySession = { id: randomBytes(16).toString('hex'), seq: 0, events: [], socket, forgotten: false };
    this.sessions.set(session.id, session);
    this.send(session, 'READY', {
      v: 10,
      user: { id: this.options.user.id, username: this.options.user.username, bot: true, discriminator: '0', global_name: null, avatar: null },
      guilds: [],
      session_id: session.id,
      resume_gateway_url: this.url,
      shard: [0, 1],
      application: { id: this.options.applicationId, flags: 0 },
    });
    this.connectedChanged();
    return session;
  }

  /** The session resumed on `socket` after replaying what it missed; undefined when it cannot be resumed. */
  private resume(socket: WebSocket, d: Record<string, unknown>): GatewaySession | undefined {
    const session = typeof d['session_id'] === 'string' ? this.sessions.get(d['session_id']) : undefined;
    if (d['token'] !== this.options.token || session === undefined || session.forgotten) return undefined;
    const seq = Number(d['seq'] ?? 0);
    this.resumed.push({ seq });
    session.socket?.terminate();
    session.socket = socket;
    const from = seq - this.overlap;
    this.overlap = 0;
    for (const event of session.events) {
      if (event.s > from) socket.send(JSON.stringify({ op: OP.dispatch, s: event.s, t: event.t, d: event.d }));
    }
    this.send(session, 'RESUMED', {});
    this.connectedChanged();
    return session;
  }

  private send(session: GatewaySession, t: string, d: unknown): void {
    const s = ++session.seq;
    session.events.push({ s, t, d });
    if (session.events.length > REPLAY_KEPT) session.events.shift();
    session.socket?.send(JSON.stringify({ op: OP.dispatch, s, t, d }));
  }

  private connectedChanged(): void {
    this.counts.mostConnected = Math.max(this.counts.mostConnected, this.connected);
    this.changes.emit('change');
  }
}
