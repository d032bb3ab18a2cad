import type { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents, type SessionInfo } from '@discordjs/ws';
import { GatewayDispatchEvents, GatewayIntentBits, type GatewayDispatchPayload } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Lease, LeaseFactory } from '../../lease/lease.js';
import { runDetached } from '../../session/index.js';
import { isSnowflake } from './discord-inbound.js';

/** The lease's name: one Gateway connection per bot token's deployment. */
export const DISCORD_GATEWAY_LEASE = 'discord-gateway';
/** Messages in servers and in direct messages, with their content (a privileged intent, enabled in the Developer Portal). */
export const DISCORD_INTENTS = GatewayIntentBits.GuildMessages | GatewayIntentBits.DirectMessages | GatewayIntentBits.MessageContent;
/** The first wait before a connection that failed or was refused is made again; it doubles up to the most. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MOST_MS = 60_000;

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
}

/** Takes one MESSAGE_CREATE's data, with the bot's own user id; the next waits for it. */
export type DiscordHand = (data: unknown, botId: string) => Promise<void>;

/**
 * The bot's Gateway connection through @discordjs/ws: identified with the message intents,
 * heartbeating, and resumed after a disconnect (session id and sequence), so Discord replays
 * what was dispatched meanwhile. Messages are handed on one at a time, in the order Discord
 * numbered them; close() lets every one received be taken before it resolves.
 */
export class DiscordConnection {
  private manager: WebSocketManager | undefined;
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

  constructor(private readonly options: DiscordConnectionOptions) {}

  /** Connects (under the lease, when there is one), handing each message to `hand`. */
  start(hand: DiscordHand): void {
    if (this.closed) return;
    const lease = this.options.lease?.(DISCORD_GATEWAY_LEASE);
    if (lease === undefined) {
      this.startRun(hand);
      return;
    }
    this.lease = lease;
    lease.start({ onAcquired: () => this.startRun(hand), onLost: () => this.stopRun() });
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
    if (this.closed || this.manager !== undefined) return;
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
    this.manager = manager;
    manager.on(WebSocketShardEvents.Dispatch, (payload) => this.dispatch(payload, hand));
    manager.on(WebSocketShardEvents.Ready, (_data, shardId) => {
      this.restartMs = RESTART_FIRST_MS;
      logger.info({ shard: shardId }, 'discord gateway ready');
    });
    manager.on(WebSocketShardEvents.Resumed, (shardId) => logger.info({ shard: shardId }, 'discord gateway resumed'));
    manager.on(WebSocketShardEvents.Closed, (code, shardId) => logger.debug({ shard: shardId, code }, 'discord gateway closed'));
    // What the library does not recover from (a refused token, disallowed intents): a new connection later.
    manager.on(WebSocketShardEvents.Error, (error, shardId) => {
      const hint = /disallowed intents/i.test(error.message) ? ': enable the Message Content Intent on the Bot page of the Developer Portal' : '';
      logger.error({ err: error, shard: shardId }, `discord gateway failed${hint}`);
      this.restart(manager, hand);
    });
    // From the root context (pitfall: Long-lived loops holding a request's context).
    runDetached(() =>
      void manager.connect().catch((error: unknown) => {
        logger.error({ err: error }, 'discord gateway could not connect');
        this.restart(manager, hand);
      }),
    );
  }

  /** Hands MESSAGE_CREATEs on in order; READY tells who the bot is. */
  private dispatch(payload: GatewayDispatchPayload, hand: DiscordHand): void {
    if (payload.t === GatewayDispatchEvents.Ready) {
      if (isSnowflake(payload.d.user.id)) this.botId = payload.d.user.id;
      return;
    }
    const botId = this.botId;
    if (payload.t !== GatewayDispatchEvents.MessageCreate || botId === undefined) return;
    this.handing = this.handing
      .then(() => hand(payload.d, botId))
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'discord message not taken'));
  }

  /** Replaces a run that failed with a new one, after a wait that doubles while they keep failing. */
  private restart(failed: WebSocketManager, hand: DiscordHand): void {
    if (this.manager !== failed) return;
    this.manager = undefined;
    void (async () => failed.destroy({ reason: 'restarting' }))().catch(() => {});
    clearTimeout(this.restartTimer);
    const wait = this.restartMs;
    this.restartMs = Math.min(this.restartMs * 2, RESTART_MOST_MS);
    this.restartTimer = runDetached(() =>
      setTimeout(() => {
        if (this.lease === undefined || this.lease.held) this.startRun(hand);
      }, wait),
    );
  }

  /** Disconnects the run under way, if any, then waits for the messages it received to be taken. */
  private async stopRun(): Promise<void> {
    clearTimeout(this.restartTimer);
    const manager = this.manager;
    this.manager = undefined;
    if (manager !== undefined) await (async () => manager.destroy({ reason: 'threadline stopping' }))().catch((error: unknown) => this.options.logger.warn({ err: error }, 'discord gateway did not close cleanly'));
    await this.drained();
  }
}
