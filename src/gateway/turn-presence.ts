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

/**
 * What a turn shows while it runs, in its own origin chat and thread only (the target is
 * fixed when the turn starts, never read from the active context): "typing…" from the start
 * until its first reply, and the answer as it is written, as drafts where the platform can
 * show them, throttled. All best-effort: a failed call is a debug log, never a failed turn.
 * Its timers start in a clean context and are cleared by close(), which the turn runner calls
 * in a finally.
 */
export class TurnPresence {
  /** Aborted by close() and by the turn's own signal: in-flight calls are let go. */
  private readonly controller = new AbortController();
  private readonly onAbort = () => this.close();
  private typingTimer: NodeJS.Timeout | undefined;
  private draftTimer: NodeJS.Timeout | undefined;
  /** The draft being sent, awaited before a reply so no draft lands after it. */
  private inFlight: Promise<void> | undefined;
  /** The answer so far as last given, and as last shown. */
  private latest = '';
  private shown = '';
  private draftId = 0;
  private lastDraftAt = Number.NEGATIVE_INFINITY;
  /** After a 429: no drafts before this. */
  private pausedUntil = 0;
  /** The platform cannot show drafts here (or they are off). */
  private draftsOff: boolean;
  private closed = false;

  constructor(
    private readonly platform: Platform | undefined,
    private readonly target: PresenceTarget,
    private readonly signal: AbortSignal,
    private readonly options: PresenceOptions,
    private readonly logger: Logger,
  ) {
    this.draftsOff = platform?.draft === undefined || options.draftIntervalMs <= 0;
    if (signal.aborted) this.closed = true;
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Sends "typing…" now and again every interval, until the first reply or close(). */
  start(): void {
    if (this.closed || this.platform?.typing === undefined || this.options.typingIntervalMs <= 0) return;
    this.typeOnce();
    this.typingTimer = runDetached(() => setInterval(() => this.typeOnce(), this.options.typingIntervalMs));
  }

  /** The answer being written, whole so far: shown as a draft once the throttle allows. */
  progress(text: string): void {
    if (this.closed || this.draftsOff) return;
    this.latest = text;
    this.schedule();
  }

  /**
   * Before a reply goes out: typing stops for good, a pending draft is dropped and one in
   * flight awaited; text given later belongs to a new draft.
   */
  async replying(): Promise<void> {
    this.stopTyping();
    if (this.draftTimer !== undefined) clearTimeout(this.draftTimer);
    this.draftTimer = undefined;
    // Cleared first, so the draft in flight schedules nothing more when it settles.
    this.latest = '';
    this.draftId = 0;
    await this.inFlight;
    this.shown = '';
  }

  /** Clears every timer and lets go of calls in flight. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopTyping();
    if (this.draftTimer !== undefined) clearTimeout(this.draftTimer);
    this.draftTimer = undefined;
    this.signal.removeEventListener('abort', this.onAbort);
    this.controller.abort();
  }

  private stopTyping(): void {
    if (this.typingTimer !== undefined) clearInterval(this.typingTimer);
    this.typingTimer = undefined;
  }

  private typeOnce(): void {
    if (this.closed) return;
    this.platform!.typing!(this.target, this.controller.signal).catch((error: unknown) => {
      this.logger.debug({ err: messageOf(error), platform: this.platform!.name }, 'typing indicator not sent');
    });
  }

  /** Sends the latest text now, or sets one timer for when the throttle (or a 429) allows. */
  private schedule(): void {
    if (this.closed || this.draftsOff || this.draftTimer !== undefined || this.inFlight !== undefined) return;
    if (this.latest === this.shown || this.latest.trim() === '') return;
    const due = Math.max(this.lastDraftAt + this.options.draftIntervalMs, this.pausedUntil);
    const wait = due - Date.now();
    if (wait <= 0) {
      this.sendDraft();
      return;
    }
    this.draftTimer = runDetached(() =>
      setTimeout(() => {
        this.draftTimer = undefined;
        this.schedule();
      }, wait),
    );
  }

  private sendDraft(): void {
    if (this.draftId === 0) this.draftId = nextDraftId();
    const text = this.latest;
    this.lastDraftAt = Date.now();
    this.inFlight = this.platform!.draft!(this.target, this.draftId, text, this.controller.signal)
      .then(
        (shown) => {
          if (shown) this.shown = text;
          else this.draftsOff = true;
        },
        (error: unknown) => {
          if (error instanceof DeliveryError && error.retryAfterMs !== undefined) this.pausedUntil = Date.now() + error.retryAfterMs;
          // Unchanged text is no failure; anything else waits for the next change.
          else if (/not modified/i.test(messageOf(error))) this.shown = text;
          this.logger.debug({ err: messageOf(error), platform: this.platform!.name }, 'draft of the answer not shown');
        },
      )
      .finally(() => {
        this.inFlight = undefined;
        this.schedule();
      });
  }
}
