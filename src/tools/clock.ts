import { runDetached } from '../session/index.js';

/** setTimeout's longest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Time for background work (reminders, cron runs, progress checks): the system's, or a
 * manual one a test advances. Callbacks run from the root context: a timer never carries the
 * context of whoever armed it (pitfall: Callbacks in their creator's context).
 */
export interface Clock {
  now(): number;
  /** Calls `fn` at `at` (ms since the epoch), or at once if that is past; returns a cancel. */
  at(at: number, fn: () => unknown): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  at(at, fn) {
    let timer: NodeJS.Timeout;
    const arm = (): void => {
      const delay = at - Date.now();
      // A delay past setTimeout's range is waited out in steps.
      timer = runDetached(() => setTimeout(delay > MAX_TIMER_MS ? arm : fn, Math.min(Math.max(delay, 0), MAX_TIMER_MS)));
      timer.unref?.();
    };
    arm();
    return () => clearTimeout(timer);
  },
};

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => unknown;
}

/**
 * A clock that moves only when told: `advance(ms)` runs every callback due by the new time, in
 * time order, each awaited, so a test can say "an hour later" and then look at what happened.
 */
export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  private timers: ManualTimer[] = [];

  constructor(start = Date.now()) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  at(at: number, fn: () => unknown): () => void {
    const timer = { at, seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((other) => other !== timer);
    };
  }

  /** Moves time forward by `ms`, running what falls due on the way; resolves when their work has settled. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      const next = this.timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== next);
      this.time = Math.max(this.time, next.at);
      await runDetached(async () => next.fn());
    }
    this.time = until;
  }

  /** Callbacks waiting, for a test that checks nothing is left armed. */
  get pending(): number {
    return this.timers.length;
  }
}
