import type { Logger } from 'pino';
import { DeliveryError, messageOf } from '../errors.js';
import type { Platform, PresenceTarget } from '../platforms/platform.js';
import { runDetached } from '../session/index.js';

/** THREADLINE_TYPING_INTERVAL_MS and THREADLINE_DRAFT_INTERVAL_MS: 0 turns either off. */
export interface PresenceOptions {
  /** How often "typing…" is sent again while a turn runs (Telegram shows it about 5 s). */
  readonly typingIntervalMs: number;
  /** The least time between two drafts of the answer being written. */
  readonly draftIntervalMs: number;
}

export const DEFAULT_PRESENCE: PresenceOptions = { typingIntervalMs: 4_000, draftIntervalMs: 400 };

/** Draft ids name one answer being written; Telegram wants them non-zero. */
let lastDraftId = 0;
function nextDraftId(): number {
  lastDraftId = (lastDraftId % 2_147_483_646) + 1;
  return lastDraftId;
}

/** A live message is posted once the answer holds this many characters: no message for a word. */
export const LIVE_FIRST_CHARS = 24;

/** How one answer being written is shown: as drafts, as a live message, or not at all. */
type Mode = 'undecided' | 'draft' | 'live' | 'off';

/**
 * What a turn shows while it runs, in its own origin chat and thread only (the target is
 * fixed when the turn starts, never read from the active context): "typing…" from the start
 * until its first reply, and each answer as it is written: as drafts where the platform shows
 * them (Telegram private chats), else as a live message it edits (posted once the answer has
 * LIVE_FIRST_CHARS characters), throttled by the platform's interval, unchanged text skipped,
 * a 429's wait honoured by skipping updates. The reply that follows names the live message
 * (`replies()` resolves its id), so its delivery edits it instead of adding a second message.
 * All best-effort: a failed call is a debug log, never a failed turn. Timers start in a
 * clean context and are cleared by close(), which the turn runner calls in a finally.
 */
export class TurnPresence {
  /** Aborted by close() and by the turn's own signal: in-flight calls are let go. Made at the first call: most turns make none. */
  private controller: AbortController | undefined;
  private readonly onAbort = () => this.close();
  private typingTimer: NodeJS.Timeout | undefined;
  private updateTimer: NodeJS.Timeout | undefined;
  /** The draft or live call being made, awaited before a reply so none lands after it. */
  private inFlight: Promise<void> | undefined;
  /** This answer: the text as last given and as last shown, how it is shown, its draft id or live message. */
  private latest = '';
  private shown = '';
  private mode: Mode = 'undecided';
  private draftId = 0;
  private liveId: string | undefined;
  private lastCallAt = Number.NEGATIVE_INFINITY;
  /** After a 429: no calls before this. */
  private pausedUntil = 0;
  /** For the rest of the turn: the platform shows no drafts here, or no live messages. */
  private draftsOff: boolean;
  private liveOff: boolean;
  private closed = false;

  constructor(
    private readonly platform: Platform | undefined,
    private readonly target: PresenceTarget,
    private readonly signal: AbortSignal,
    private readonly options: PresenceOptions,
    private readonly logger: Logger,
  ) {
    this.draftsOff = platform?.draft === undefined || options.draftIntervalMs <= 0;
    this.liveOff = platform?.postLive === undefined || platform.editLive === undefined || (platform.liveIntervalMs?.(target) ?? 0) <= 0;
    if (signal.aborted) this.closed = true;
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Sends "typing…" now and again every interval, until the first reply or close(). */
  start(): void {
    if (this.closed || this.platform?.typing === undefined || this.options.typingIntervalMs <= 0) return;
    this.typeOnce();
    this.typingTimer = runDetached(() => setInterval(() => this.typeOnce(), this.options.typingIntervalMs));
  }

  /** The answer being written, whole so far: shown once the throttle allows. */
  progress(text: string): void {
    if (this.closed) return;
    this.latest = text;
    this.schedule();
  }

  /**
   * Before a reply goes out: typing stops for good, a pending update is dropped and one in
   * flight awaited. Resolves the live message of this answer, which the reply replaces; text
   * given later belongs to a new answer.
   */
  async replying(): Promise<string | undefined> {
    this.stopTyping();
    if (this.updateTimer !== undefined) clearTimeout(this.updateTimer);
    this.updateTimer = undefined;
    // Cleared first, so the call in flight schedules nothing more when it settles.
    this.latest = '';
    await this.inFlight;
    const live = this.liveId;
    this.shown = '';
    this.mode = 'undecided';
    this.draftId = 0;
    this.liveId = undefined;
    return live;
  }

  /** Clears every timer and lets go of calls in flight. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopTyping();
    if (this.updateTimer !== undefined) clearTimeout(this.updateTimer);
    this.updateTimer = undefined;
    this.signal.removeEventListener('abort', this.onAbort);
    this.controller?.abort();
  }

  /** The signal of a platform call: aborted once the presence closes. */
  private callSignal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.closed) this.controller.abort();
    return this.controller.signal;
  }

  private stopTyping(): void {
    if (this.typingTimer !== undefined) clearInterval(this.typingTimer);
    this.typingTimer = undefined;
  }

  private typeOnce(): void {
    if (this.closed) return;
    attempt(() => this.platform!.typing!(this.target, this.callSignal())).catch((error: unknown) => {
      this.logger.debug({ err: messageOf(error), platform: this.platform!.name }, 'typing indicator not sent');
    });
  }

  /** Drafts where the platform shows them, else a live message, else nothing. */
  private decide(): Exclude<Mode, 'undecided'> {
    if (this.mode === 'undecided' || (this.mode === 'draft' && this.draftsOff) || (this.mode === 'live' && this.liveOff && this.liveId === undefined)) {
      this.mode = !this.draftsOff ? 'draft' : !this.liveOff ? 'live' : 'off';
    }
    return this.mode as Exclude<Mode, 'undecided'>;
  }

  private intervalMs(mode: Mode): number {
    return mode === 'draft' ? this.options.draftIntervalMs : (this.platform?.liveIntervalMs?.(this.target) ?? 0);
  }

  /** Shows the latest text now, or sets one timer for when the throttle (or a 429) allows. */
  private schedule(): void {
    if (this.closed || this.updateTimer !== undefined || this.inFlight !== undefined) return;
    if (this.latest === this.shown || this.latest.trim() === '') return;
    const mode = this.decide();
    if (mode === 'off') return;
    if (mode === 'live' && this.liveId === undefined && this.latest.length < LIVE_FIRST_CHARS) return;
    const due = Math.max(this.lastCallAt + this.intervalMs(mode), this.pausedUntil);
    const wait = due - Date.now();
    if (wait <= 0) {
      this.show(mode);
      return;
    }
    this.updateTimer = runDetached(() =>
      setTimeout(() => {
        this.updateTimer = undefined;
        this.schedule();
      }, wait),
    );
  }

  private show(mode: 'draft' | 'live'): void {
    const platform = this.platform!;
    const text = this.latest;
    const signal = this.callSignal();
    this.lastCallAt = Date.now();
    let call: Promise<void>;
    if (mode === 'draft') {
      if (this.draftId === 0) this.draftId = nextDraftId();
      call = attempt(() => platform.draft!(this.target, this.draftId, text, signal)).then((shown) => {
        if (shown) this.shown = text;
        else {
          // No draft here (and no call made): a live message may start at once.
          this.draftsOff = true;
          this.lastCallAt = Number.NEGATIVE_INFINITY;
        }
      });
    } else if (this.liveId === undefined) {
      call = attempt(() => platform.postLive!(this.target, text, signal)).then(
        (id) => {
          this.liveId = id;
          this.shown = text;
        },
        (error: unknown) => {
          // Posting failed outright: no live messages this turn (a 429 only waits).
          if (!(error instanceof DeliveryError && error.retryAfterMs !== undefined)) this.liveOff = true;
          throw error;
        },
      );
    } else {
      call = attempt(() => platform.editLive!(this.target, this.liveId!, text, signal)).then(() => {
        this.shown = text;
      });
    }
    this.inFlight = call
      .catch((error: unknown) => {
        if (error instanceof DeliveryError && error.retryAfterMs !== undefined) this.pausedUntil = Date.now() + error.retryAfterMs;
        else if (error instanceof DeliveryError && !error.retryable) {
          // Refused for good: no more drafts this turn (a live message may take over), or no
          // more edits of a live message that is gone (the reply falls back to a new message).
          if (mode === 'draft') {
            this.draftsOff = true;
            this.lastCallAt = Number.NEGATIVE_INFINITY;
          } else if (this.liveId !== undefined) this.mode = 'off';
        }
        this.logger.debug({ err: messageOf(error), platform: platform.name, mode }, 'answer being written not shown');
      })
      .finally(() => {
        this.inFlight = undefined;
        this.schedule();
      });
  }
}

/** A platform's call as a promise, also when it throws before returning one: a throw in a timer would end the process. */
function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (error) {
    return Promise.reject(error);
  }
}
