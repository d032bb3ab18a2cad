/**
 * An instance's slots (THREADLINE_CONCURRENCY): what runs here at once, whether it came as a
 * drain job or was claimed at once by the offer that brought it. A waiter is served before a
 * claim at once, so work the cluster handed here is not overtaken by work that just arrived.
 */
export class Slots {
  private taken = 0;
  private readonly waiters: (() => void)[] = [];
  private readonly freeWatchers: (() => void)[] = [];

  constructor(readonly capacity: number) {}

  /** Takes a slot when one is free and nobody waits for one; false otherwise. */
  tryTake(): boolean {
    if (this.taken >= this.capacity || this.waiters.length > 0) return false;
    this.taken++;
    return true;
  }

  /** Takes a slot once one is free, waiting at most `ms` in line with the other waiters: false when none came in time. */
  takeWithin(ms: number): Promise<boolean> {
    if (this.tryTake()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const served = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(served), 1);
        // Leaving the line may leave a free slot nobody waits for any more.
        if (this.taken < this.capacity && this.waiters.length === 0) for (const notify of this.freeWatchers.splice(0)) notify();
        resolve(false);
      }, ms);
      this.waiters.push(served);
    });
  }

  /** Gives a slot back: to the longest waiter, if any. */
  give(): void {
    const next = this.waiters.shift();
    if (next !== undefined) next();
    else {
      this.taken--;
      for (const notify of this.freeWatchers.splice(0)) notify();
    }
  }

  /** Resolves once a slot is free (without taking it): what fetches work from the cluster waits on. */
  whenFree(): Promise<void> {
    if (this.taken < this.capacity && this.waiters.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.freeWatchers.push(resolve));
  }

  get inUse(): number {
    return this.taken;
  }
}
