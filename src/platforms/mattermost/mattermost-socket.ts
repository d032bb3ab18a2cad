import WebSocket from 'ws';
import { messageOf } from '../../errors.js';

export interface MattermostSocketOptions {
  /** The server's address (http or https), without a trailing slash. */
  readonly url: string;
  readonly token: string;
  /** The authentication challenge must be answered within this long. */
  readonly connectTimeoutMs: number;
  /** A ping is sent this often; a connection silent for two of them is taken for dead. */
  readonly pingIntervalMs: number;
  /** Each event the server sends, in order (`posted`, `hello`, …), with its data. */
  readonly onEvent: (event: string, data: Record<string, unknown>) => void;
}

/** The websocket's path under the server's address. */
export const MATTERMOST_WEBSOCKET_PATH = '/api/v4/websocket';

/**
 * One websocket connection to Mattermost, on `ws`: the SDK's WebSocketClient reads the global
 * WebSocket and CloseEvent, which Node 20 does not have (docs/decisions.md). It authenticates
 * with the `authentication_challenge` action (the token goes in a frame, never in the URL),
 * hands each event on in order, and ends for good at the first sign of loss: a close, two
 * ping intervals without a word, or a gap in the events' `seq` (the server dropped some).
 * Whoever opened it opens a new one and catches up on what was posted meanwhile.
 */
export class MattermostSocket {
  /** Resolves once the connection has ended, with why. */
  readonly ended: Promise<string>;
  /** Local time of the last frame received: up to then, the server had sent all it had. */
  lastHeardAt = Date.now();
  /** Local time of the last sign of life, or of the end of a pause: the liveness check's clock. */
  private lastSignAt = Date.now();
  private endWith!: (reason: string) => void;
  private nextSeq = 1;
  private expectedEventSeq = 0;
  private pinger: NodeJS.Timeout | undefined;
  /** Reading is paused: the silence that follows says nothing about the connection. */
  private paused = false;

  private constructor(private readonly ws: WebSocket, private readonly options: MattermostSocketOptions) {
    this.ended = new Promise((resolve) => (this.endWith = resolve));
  }

  /** Connects and authenticates; rejects when the server refuses the token or does not answer in time. */
  static open(options: MattermostSocketOptions): Promise<MattermostSocket> {
    const url = new URL(`${options.url}${MATTERMOST_WEBSOCKET_PATH}`);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url, { handshakeTimeout: options.connectTimeoutMs, maxPayload: 16 * 1024 * 1024 });
    const socket = new MattermostSocket(ws, options);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(`no answer to the authentication challenge within ${options.connectTimeoutMs} ms`), options.connectTimeoutMs);
      let authenticated = false;
      const fail = (reason: string) => {
        clearTimeout(timer);
        ws.terminate();
        reject(new Error(reason));
      };
      ws.once('open', () => socket.send('authentication_challenge', { token: options.token }));
      ws.on('error', (error) => fail(`the websocket failed: ${messageOf(error)}`));
      ws.once('close', (code) => {
        if (!authenticated) fail(`the server closed the websocket (${code}) before it authenticated: is THREADLINE_MATTERMOST_TOKEN valid?`);
      });
      ws.on('message', (raw) => {
        const frame = parseFrame(raw);
        if (frame === undefined) return;
        // The challenge is the first request (seq 1): its OK, or the hello event, says the token was taken.
        if (!authenticated && ((frame['seq_reply'] === 1 && frame['status'] === 'OK') || frame['event'] === 'hello')) {
          authenticated = true;
          clearTimeout(timer);
          socket.listen();
          resolve(socket);
        }
        if (authenticated) socket.receive(frame);
      });
    });
  }

  /** user_typing in the channel (and thread): "typing…" for a few seconds. False when the connection is gone. */
  typing(channelId: string, parentId: string): boolean {
    if (this.ws.readyState !== WebSocket.OPEN) return false;
    this.send('user_typing', { channel_id: channelId, parent_id: parentId });
    return true;
  }

  /** Stops reading until resume(): what the server sends meanwhile waits in its buffers, not in our memory. */
  pause(): void {
    this.paused = true;
    this.ws.pause();
  }

  resume(): void {
    this.paused = false;
    this.lastSignAt = Date.now();
    this.ws.resume();
  }

  /** Ends the connection; resolves once it has ended. */
  close(reason = 'closed'): Promise<string> {
    this.end(reason);
    return this.ended;
  }

  private listen(): void {
    this.ws.removeAllListeners('error');
    this.ws.removeAllListeners('close');
    this.ws.on('error', (error) => this.end(`the websocket failed: ${messageOf(error)}`));
    this.ws.on('close', (code) => this.end(`the server closed the websocket (${code})`));
    this.ws.on('pong', () => this.heard());
    this.ws.on('ping', () => this.heard());
    this.pinger = setInterval(() => {
      if (this.paused) return;
      if (Date.now() - this.lastSignAt > 2 * this.options.pingIntervalMs) this.end(`no word from the server in ${2 * this.options.pingIntervalMs} ms`);
      else this.ws.ping();
    }, this.options.pingIntervalMs);
    this.pinger.unref();
  }

  private heard(): void {
    this.lastHeardAt = Date.now();
    this.lastSignAt = this.lastHeardAt;
  }

  private receive(frame: Record<string, unknown>): void {
    this.heard();
    const event = frame['event'];
    if (typeof event !== 'string') return;
    const seq = frame['seq'];
    // The hello starts the stream at 0; after it, a seq that skips says events were lost.
    if (event === 'hello') this.expectedEventSeq = typeof seq === 'number' ? seq : 0;
    if (typeof seq === 'number' && seq !== this.expectedEventSeq) {
      this.end(`events ${this.expectedEventSeq} to ${seq - 1} never came`);
      return;
    }
    this.expectedEventSeq++;
    const data = frame['data'];
    this.options.onEvent(event, typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {});
  }

  private send(action: string, data: Record<string, unknown>): void {
    this.ws.send(JSON.stringify({ seq: this.nextSeq++, action, data }));
  }

  private end(reason: string): void {
    clearInterval(this.pinger);
    this.ws.removeAllListeners('message');
    this.ws.terminate();
    this.endWith(reason);
  }
}

function parseFrame(raw: WebSocket.RawData): Record<string, unknown> | undefined {
  try {
    const frame = JSON.parse(raw.toString()) as unknown;
    return typeof frame === 'object' && frame !== null && !Array.isArray(frame) ? (frame as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
