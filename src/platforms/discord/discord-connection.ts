import type { REST } from '@discordjs/rest';
import { CloseCodes, WebSocketManager, WebSocketShardEvents, type SessionInfo } from '@discordjs/ws';
import { GatewayDispatchEvents, GatewayIntentBits, type GatewayDispatchPayload } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Lease, LeaseFactory } from '../../lease/lease.js';
import type { SyncTokens } from '../../store/store.js';
import { runDetached } from '../../session/index.js';
import { isSnowflake } from './discord-inbound.js';
import { DiscordSessionHandover } from './discord-session-handover.js';
import { startUnderLease } from '../../lease/start-under-lease.js';

/** The lease's name: one Gateway connection per bot token's deployment. */
export const DISCORD_GATEWAY_LEASE = 'discord-gateway';
/** Messages in servers and in direct messages, with their content (a privileged intent, enabled in the Developer Portal). */
export const DISCORD_INTENTS = GatewayIntentBits.GuildMessages | GatewayIntentBits.DirectMessages | GatewayIntentBits.MessageContent;
/** The first wait before a connection that failed or was refused is made again; it doubles up to the most. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MOST_MS = 60_000;
/** How long a stop waits for a handshake under way to end, and then for the socket to close. */
const HANDSHAKE_WAIT_MS = 5_000;
const CLOSE_WAIT_MS = 3_000;

export interface DiscordConnectionOptions {
  readonly token: string;
  /** The REST client, at the API root: the Gateway URL comes from its GET /gateway/bot. */
  readonly rest: REST;
  readonly logger: Logger;
  /**
   * Several instances on one Redis: the Gateway is connected only on the instance holding this
   * lease (two connections would each get every message). Unset, this instance connects alone.
   */
  readonly lease?: LeaseFactory | undefined;
  /**
   * The store's sync tokens, where the session is kept for the next connection (after a
   * restart, or on the instance that takes the lease over), so it resumes and Discord replays
   * what came meanwhile. Unset, it is not kept.
   */
  readonly syncTokens?: SyncTokens | undefined;
}

/** Takes one MESSAGE_CREATE's or INTERACTION_CREATE's data, with the bot's own user id; the next waits for it. */
export type DiscordHand = (event: 'message' | 'interaction', data: unknown, botId: string) => Promise<void>;

/** One WebSocketManager, from its start to its stop. */
interface DiscordRun {
  readonly manager: WebSocketManager;
  /** Resolves once a handshake ended (READY or RESUMED) or the run failed. */
  readonly settled: Promise<void>;
  stopped: boolean;
  /** destroy() was called: a handshake ending after it is the library's own reconnection. */
  destroying: boolean;
}

/**
 * The bot's Gateway connection through @discordjs/ws: identified with the message intents,
 * heartbeating, and resumed after a disconnect (session id and sequence), so Discord replays
 * what was dispatched meanwhile; the session is also kept for the next connection (handover).
 * Messages are handed on one at a time, in the order Discord numbered them; close() lets every
 * one received be taken before it resolves.
 */
export class DiscordConnection {
  private run: DiscordRun | undefined;
  private readonly handover: DiscordSessionHandover;
  /** Each shard's session, for resuming; the library updates it as dispatches arrive. */
  private readonly sessions = new Map<number, SessionInfo>();
  /** The bot's user id, from READY: its mentions address it, its own messages are skipped. */
  private botId: string | undefined;
  /** The messages received and not yet taken, as one chain. */
  private handing: Promise<void> = Promise.resolve();
  private lease: Lease | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartMs = RESTART_FIRST_MS;
  private closed = false;

  constructor(private readonly options: DiscordConnectionOptions) {
    this.handover = new DiscordSessionHandover(options.syncTokens, options.logger);
  }

  /** Connects (under the lease, when there is one), handing each message to `hand`. */
  start(hand: DiscordHand): void {
    if (this.closed) return;
    this.lease = startUnderLease(this.options.lease, DISCORD_GATEWAY_LEASE, { start: () => this.startRun(hand), stop: () => this.stopRun() });
  }

  /**
   * Disconnects, lets the messages received be taken (intake is still open then), and releases
   * the lease, so another instance connects at once.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    // The lease's stop() disconnects (onLost) before it releases the lease.
    await this.lease?.stop();
    await this.stopRun();
  }

  /** Every message received so far has been taken (or given up). */
  async drained(): Promise<void> {
    let inHand: Promise<void>;
    do {
      inHand = this.handing;
      await inHand;
    } while (inHand !== this.handing);
  }

  private startRun(hand: DiscordHand): void {
    if (this.closed || this.run !== undefined) return;
    const { logger } = this.options;
    const manager = new WebSocketManager({
      token: this.options.token,
      intents: DISCORD_INTENTS,
      rest: this.options.rest,
      // Each connection's own: the library's default store is shared by every manager in the process.
      retrieveSessionInfo: (shardId) => this.sessions.get(shardId) ?? null,
      updateSessionInfo: (shardId, info) => {
        if (info === null) this.sessions.delete(shardId);
        else this.sessions.set(shardId, info);
      },
    });
    let settle!: () => void;
    const run: DiscordRun = { manager, settled: new Promise<void>((resolve) => (settle = resolve)), stopped: false, destroying: false };
    this.run = run;
    manager.on(WebSocketShardEvents.Dispatch, (payload, shardId) => this.dispatch(payload, shardId, hand));
    const handshakeEnded = (what: string, shardId: number) => {
      settle();
      if (run.destroying) {
        // The library reconnected a run that was stopped (see stopRun): it is ended once more, now that no handshake is under way.
        setImmediate(() => void (async () => manager.destroy({ reason: 'threadline stopped' }))().catch(() => {}));
        return;
      }
      this.restartMs = RESTART_FIRST_MS;
      logger.info({ shard: shardId }, `discord gateway ${what}`);
    };
    manager.on(WebSocketShardEvents.Ready, (_data, shardId) => handshakeEnded('ready', shardId));
    manager.on(WebSocketShardEvents.Resumed, (shardId) => handshakeEnded('resumed', shardId));
    manager.on(WebSocketShardEvents.Closed, (code, shardId) => logger.debug({ shard: shardId, code }, 'discord gateway closed'));
    // What the library does not recover from (a refused token, disallowed intents): a new connection later.
    manager.on(WebSocketShardEvents.Error, (error, shardId) => {
      settle();
      const hint = /disallowed intents/i.test(error.message) ? ': enable the Message Content Intent on the Bot page of the Developer Portal' : '';
      logger.error({ err: error, shard: shardId }, `discord gateway failed${hint}`);
      this.restart(run, hand);
    });
    // From the root context (pitfall: Long-lived loops holding a request's context).
    runDetached(() =>
      void (async () => {
        await this.resumeHandedOver(manager);
        // Stopped while the handover was read: never connected.
        if (run.stopped) return settle();
        await manager.connect();
      })().catch((error: unknown) => {
        settle();
        logger.error({ err: error }, 'discord gateway could not connect');
        this.restart(run, hand);
      }),
    );
  }

  /**
   * Takes up the session the last connection left (this instance before a restart, or the
   * instance that held the lease), so the library resumes it: Discord then replays what was
   * dispatched since the last message taken. Only a session whose resume URL is on the
   * Gateway's own host (or a sibling host of its domain) is resumed: the token goes there.
   */
  private async resumeHandedOver(manager: WebSocketManager): Promise<void> {
    // Read at every start, so this connection's writes advance from what is kept now.
    const handover = await this.handover.load();
    if (handover === undefined || this.sessions.size > 0) return;
    const gateway = new URL((await manager.fetchGatewayInformation()).url);
    const resumable = handover.sessions.filter((session) => sameSite(new URL(session.resumeURL), gateway));
    if (resumable.length === 0) return;
    this.botId ??= handover.botId;
    for (const session of resumable) this.sessions.set(session.shardId, session);
    this.options.logger.info({ shards: resumable.length }, 'discord gateway resuming the session the last connection left');
  }

  /**
   * Hands MESSAGE_CREATEs and INTERACTION_CREATEs (slash commands and button presses, when no
   * Interactions Endpoint URL is set) on in order (READY tells who the bot is), and counts every dispatch
   * as taken, in order, once the ones before it are: the session handed over resumes after it.
   */
  private dispatch(payload: GatewayDispatchPayload, shardId: number, hand: DiscordHand): void {
    if (payload.t === GatewayDispatchEvents.Ready && isSnowflake(payload.d.user.id)) this.botId = payload.d.user.id;
    const botId = this.botId;
    // The session this dispatch belongs to, as the library holds it now (a READY's is already there).
    const session = this.sessions.get(shardId);
    const event = payload.t === GatewayDispatchEvents.MessageCreate ? 'message' : payload.t === GatewayDispatchEvents.InteractionCreate ? 'interaction' : undefined;
    this.handing = this.handing.then(async () => {
      if (event !== undefined && botId !== undefined) {
        await hand(event, payload.d, botId).catch((error: unknown) => this.options.logger.error({ err: error }, `discord ${event} not taken`));
      }
      if (session !== undefined && botId !== undefined) this.handover.taking(botId, { ...session, sequence: payload.s });
    });
  }

  /** Replaces a run that failed with a new one, after a wait that doubles while they keep failing. */
  private restart(failed: DiscordRun, hand: DiscordHand): void {
    if (this.run !== failed) return;
    this.run = undefined;
    failed.stopped = true;
    failed.destroying = true;
    void (async () => failed.manager.destroy({ reason: 'restarting' }))().catch(() => {});
    clearTimeout(this.restartTimer);
    const wait = this.restartMs;
    this.restartMs = Math.min(this.restartMs * 2, RESTART_MOST_MS);
    this.restartTimer = runDetached(() =>
      setTimeout(() => {
        if (this.lease === undefined || this.lease.held) this.startRun(hand);
      }, wait),
    );
  }

  /**
   * Disconnects the run under way, if any, then waits for the messages it received to be taken.
   * A handshake under way is let finish first: destroyed while it waits for HELLO or READY,
   * @discordjs/ws 2.0.4 reconnects on its own and never resolves the destroy. A run that
   * reconnects all the same is ended again at its next READY or RESUMED.
   */
  private async stopRun(): Promise<void> {
    clearTimeout(this.restartTimer);
    const run = this.run;
    this.run = undefined;
    if (run !== undefined) {
      run.stopped = true;
      await within(run.settled, HANDSHAKE_WAIT_MS);
      // After the library's own READY listeners, which end its wait.
      await new Promise((resolve) => setImmediate(resolve));
      run.destroying = true;
      // Not 1000: Discord keeps the session resumable for the next connection.
      const destroyed = (async () => run.manager.destroy({ reason: 'threadline stopping', code: CloseCodes.Resuming }))().catch((error: unknown) =>
        this.options.logger.warn({ err: error }, 'discord gateway did not close cleanly'),
      );
      if (!(await within(destroyed, CLOSE_WAIT_MS))) this.options.logger.warn('discord gateway did not close in time; going on');
    }
    await this.drained();
    await this.handover.flush();
  }
}

/** Whether `work` settled within `ms`. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `url` is on `gateway`'s host, or on a host of the same domain (Discord resumes on wss://gateway-us-east1-b.discord.gg). */
function sameSite(url: URL, gateway: URL): boolean {
  if (url.protocol !== gateway.protocol) return false;
  if (url.host === gateway.host) return true;
  const domain = (host: string) => host.split('.').slice(-2).join('.');
  return !/^[\d.]+$|^\[/.test(gateway.hostname) && gateway.hostname.includes('.') && domain(url.hostname) === domain(gateway.hostname);
}
