import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { runDetached } from '../../session/index.js';
import type { SyncTokens } from '../../store/store.js';
import type { InboundMessage } from '../platform.js';
import type { MatrixClient } from './matrix-client.js';
import { matrixDeliveryError, retryAfterMsOf } from './matrix-errors.js';
import { matrixInbound } from './matrix-inbound.js';
import { parseMessagesPage, parseSync, type SyncBatch, type SyncedRoom } from './matrix-sync-batch.js';

export interface MatrixSyncRunOptions {
  readonly client: MatrixClient;
  /** Where the stream's `since` token is kept: it is advanced only once a batch's events are accepted. */
  readonly tokens: SyncTokens;
  readonly logger: Logger;
  /** The bot's user id (whoami): its own events are not messages, and it names the stream. */
  readonly botUser: (signal: AbortSignal) => Promise<string>;
  /**
   * Hands one message to intake and resolves once it is accepted, or refused for good;
   * throws when it was not taken (the gateway is stopping): then the batch's token is not stored.
   */
  readonly hand: (message: InboundMessage, signal: AbortSignal) => Promise<void>;
  /** How long one /sync waits for events on the homeserver. */
  readonly pollMs?: number;
}

/** Only what becomes a message, or must be refused aloud: the rest of each room's state stays on the homeserver. */
const TIMELINE_TYPES = ['m.room.message', 'm.room.encrypted'];
const NOTHING = { not_types: ['*'] };
/** A timeline this long holds a busy room's events between two syncs; a longer gap is read through /messages. */
const TIMELINE_LIMIT = 50;
const syncFilter = (limit: number) =>
  JSON.stringify({
    room: { timeline: { limit, types: TIMELINE_TYPES }, state: NOTHING, ephemeral: NOTHING, account_data: NOTHING },
    presence: NOTHING,
    account_data: NOTHING,
  });
const SYNC_FILTER = syncFilter(TIMELINE_LIMIT);
/** The first sync ever only finds where "now" is: history before it is not answered. */
const FIRST_SYNC_FILTER = syncFilter(1);
const GAP_FILTER = JSON.stringify({ types: TIMELINE_TYPES });
const GAP_PAGE = 100;
/** A gap longer than this many pages (a long outage in a busy room) is read this far back; older events are said to be skipped. */
const GAP_PAGES = 20;
const POLL_MS = 30_000;
/** Waits after a failed sync: doubling from the first to the last, or what a 429 asked for. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;
/** Rooms already said to be encrypted, or to have invited the bot, in this run. */
const ROOMS_REMEMBERED = 10_000;

/**
 * One run of the /sync loop, from start() to stop(): reads on from the stored `since` token,
 * hands every message of a batch to intake (each room's in order, rooms side by side), and only
 * then stores the batch's `next_batch`, so a stop or a crash at any point reads that batch
 * again at the next start, where intake's idempotency keys (the event ids) answer what was
 * taken already as duplicates: nothing lost, nothing run twice. A timeline the homeserver cut
 * short (`limited`) is completed from /messages back to the previous token.
 */
export class MatrixSyncRun {
  private readonly controller = new AbortController();
  private running: Promise<void> | undefined;
  private readonly encryptedRooms = new LRUCache<string, true>({ max: ROOMS_REMEMBERED });
  private readonly invitedRooms = new LRUCache<string, true>({ max: ROOMS_REMEMBERED });

  constructor(private readonly options: MatrixSyncRunOptions) {}

  /** Syncs from the root context (pitfall: Long-lived loops holding a request's context). */
  start(): void {
    this.running ??= runDetached(() => this.loop());
  }

  /** Aborts the sync under way and waits for the messages in hand to be accepted; the batch's token stays unstored. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async loop(): Promise<void> {
    const { signal } = this.controller;
    let failures = 0;
    let user: string | undefined;
    let since: string | undefined;
    while (!this.stopped) {
      try {
        if (user === undefined) {
          const asked = await this.options.botUser(signal);
          since = await this.options.tokens.get(streamOf(asked));
          user = asked;
        }
        const first = since === undefined;
        const batch = parseSync(await this.options.client.sync(since, first ? 0 : (this.options.pollMs ?? POLL_MS), first ? FIRST_SYNC_FILTER : SYNC_FILTER, signal));
        if (first) this.options.logger.info('matrix: first sync of this account; messages sent before it are not answered');
        else await this.take(batch, since!, user);
        // Stopped after the batch was taken: its token stays unstored, and the next start reads it again (as duplicates).
        if (this.stopped) return;
        if (!(await this.options.tokens.advance(streamOf(user), since, batch.nextBatch))) {
          // Another instance read on meanwhile (this one lost the sync lease): go on from where it got.
          this.options.logger.warn('matrix: the sync token was advanced elsewhere; reading on from the stored one');
          since = await this.options.tokens.get(streamOf(user));
          continue;
        }
        since = batch.nextBatch;
        failures = 0;
      } catch (error) {
        if (this.stopped) return;
        failures++;
        const waitMs = retryAfterMsOf(error) ?? Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
        const log = failures === 1 || failures % 10 === 0 ? 'warn' : 'debug';
        this.options.logger[log]({ reason: matrixDeliveryError(error, 'sync').message, failures, retryInMs: waitMs }, 'matrix: sync failed; trying again');
        await sleep(waitMs, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  /** Hands the batch's messages to intake: each room's in order, the rooms side by side. */
  private async take(batch: SyncBatch, since: string, botUser: string): Promise<void> {
    for (const roomId of batch.invitedRooms) {
      if (this.invitedRooms.has(roomId)) continue;
      this.invitedRooms.set(roomId, true);
      this.options.logger.info({ chat: roomId }, 'matrix: invited to a room; threadline does not join rooms by itself: join it from the bot account to be answered there');
    }
    // Settled, all of them, before the batch is read again: a room still handing would race its own next read.
    const outcomes = await Promise.allSettled(batch.rooms.map((room) => this.takeRoom(room, since, botUser)));
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  private async takeRoom(room: SyncedRoom, since: string, botUser: string): Promise<void> {
    const missed = room.limited && room.prevBatch !== undefined ? await this.gap(room.roomId, room.prevBatch, since) : [];
    for (const event of [...missed, ...room.events]) {
      // The rest of the batch waits for the next start: its token is not stored.
      if (this.stopped) throw new Error('stopped');
      const outcome = matrixInbound(room.roomId, event, botUser);
      if (outcome.kind === 'message') await this.options.hand(outcome.message, this.controller.signal);
      else if (outcome.kind === 'encrypted') this.refuseEncrypted(room.roomId, outcome.eventId);
    }
  }

  /** The events between the last sync and a cut-short timeline, oldest first. */
  private async gap(roomId: string, prevBatch: string, since: string): Promise<unknown[]> {
    const events: unknown[] = [];
    let from = prevBatch;
    for (let page = 0; page < GAP_PAGES; page++) {
      const { events: newestFirst, end } = parseMessagesPage(await this.options.client.messages(roomId, from, since, GAP_PAGE, GAP_FILTER, this.controller.signal));
      events.push(...newestFirst);
      if (newestFirst.length === 0 || end === undefined || end === from) return events.reverse();
      from = end;
    }
    this.options.logger.warn({ chat: roomId, read: events.length }, 'matrix: a gap in a room is longer than is read back; its older events are not answered');
    return events.reverse();
  }

  /** An encrypted event is said so, once a room a run at warn: threadline has no Matrix crypto to read it. */
  private refuseEncrypted(roomId: string, eventId: string | undefined): void {
    const first = !this.encryptedRooms.has(roomId);
    this.encryptedRooms.set(roomId, true);
    this.options.logger[first ? 'warn' : 'debug'](
      { chat: roomId, event: eventId },
      'matrix: an end-to-end encrypted event was not read and is not answered: threadline cannot decrypt (it has no Matrix crypto); use a room without encryption',
    );
  }
}

/** The name of an account's stream in the store: a new account (another token's) starts afresh. */
function streamOf(user: string): string {
  return `matrix:${user}`;
}
