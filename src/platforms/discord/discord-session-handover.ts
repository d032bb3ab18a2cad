import type { SessionInfo } from '@discordjs/ws';
import type { Logger } from 'pino';
import type { SyncTokens } from '../../store/store.js';
import { runDetached } from '../../session/index.js';
import { isSnowflake } from './discord-inbound.js';

/** The stream the session is kept under, among the store's sync tokens. */
export const DISCORD_SESSION_STREAM = 'discord-gateway';
/** The least time between two writes while messages come in; a stop writes at once. */
const SAVE_EVERY_MS = 1_000;

/** What is handed over: the bot, and each shard's session at the last dispatch taken. */
export interface DiscordHandover {
  readonly botId: string;
  readonly sessions: readonly SessionInfo[];
}

/**
 * The Gateway session, kept in the store (a sync token) for whoever connects next (this
 * instance after a restart, or another one after a lease handover): the session id, resume
 * URL and the sequence of the last dispatch *taken*, not merely received, so a resume replays
 * whatever had not been taken yet (taken twice, it is answered once). Written at most once a
 * second while messages come in, and at once when the connection stops; each write advances
 * from the value this connection read or wrote, so a connection another has replaced since
 * cannot move it back.
 */
export class DiscordSessionHandover {
  private readonly taken = new Map<number, SessionInfo>();
  private botId: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Writes one at a time, in order. */
  private writing: Promise<void> = Promise.resolve();
  /** The value as this connection last read or wrote it: the next write advances from it. */
  private stored: string | undefined;

  constructor(
    private readonly tokens: SyncTokens | undefined,
    private readonly logger: Logger,
  ) {}

  /** The handover last written, when there is a usable one; read at each connection's start. */
  async load(): Promise<DiscordHandover | undefined> {
    if (this.tokens === undefined) return undefined;
    const text = await this.tokens.get(DISCORD_SESSION_STREAM).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'discord gateway session kept by the last connection not read; identifying afresh');
      return undefined;
    });
    this.stored = text;
    if (text === undefined) return undefined;
    try {
      const value = JSON.parse(text) as { botId?: unknown; sessions?: unknown };
      if (!isSnowflake(value.botId) || !Array.isArray(value.sessions)) return undefined;
      const sessions = value.sessions.filter(isSessionInfo);
      return sessions.length === 0 ? undefined : { botId: value.botId, sessions };
    } catch {
      return undefined;
    }
  }

  /** Dispatch `session.sequence` of the bot `botId` has been taken: written within a second. */
  taking(botId: string, session: SessionInfo): void {
    this.botId = botId;
    this.taken.set(session.shardId, session);
    if (this.tokens === undefined || this.timer !== undefined) return;
    this.timer = runDetached(() =>
      setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, SAVE_EVERY_MS),
    );
    this.timer.unref();
  }

  /** Writes what was taken so far now. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const { tokens, botId } = this;
    if (tokens === undefined || botId === undefined || this.taken.size === 0) return this.writing;
    const value = JSON.stringify({ botId, sessions: [...this.taken.values()] } satisfies DiscordHandover);
    this.writing = this.writing
      .then(async () => {
        if (value === this.stored) return;
        if (await tokens.advance(DISCORD_SESSION_STREAM, this.stored, value)) this.stored = value;
        else this.logger.debug('discord gateway session kept by a newer connection; this one no longer writes it');
      })
      .catch((error: unknown) => this.logger.warn({ err: error }, 'discord gateway session not kept for the next connection'));
    return this.writing;
  }
}

function isSessionInfo(value: unknown): value is SessionInfo {
  if (typeof value !== 'object' || value === null) return false;
  const session = value as Record<string, unknown>;
  return (
    typeof session['sessionId'] === 'string' &&
    typeof session['resumeURL'] === 'string' &&
    /^wss?:\/\//.test(session['resumeURL']) &&
    Number.isSafeInteger(session['sequence']) &&
    Number.isSafeInteger(session['shardId']) &&
    Number.isSafeInteger(session['shardCount'])
  );
}
