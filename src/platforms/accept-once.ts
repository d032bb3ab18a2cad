/**
 * Runs the accepts of one platform message one at a time. Platforms deliver again whatever
 * they saw no answer for, sometimes while the first delivery is still being accepted; the
 * second then waits for the first's outcome and asks intake again, whose durable idempotency
 * key answers it as a duplicate, or takes it if the first failed. Nothing is remembered once
 * an accept has ended: the store remembers.
 */
export class AcceptOnce {
  private readonly pending = new Map<string, Promise<unknown>>();

  async accept<T>(key: string, accept: () => Promise<T>): Promise<T> {
    for (let first = this.pending.get(key); first !== undefined; first = this.pending.get(key)) {
      await first.catch(() => {});
    }
    // Called inside an async function, so one that throws at once still fails only this attempt.
    const attempt = (async () => accept())();
    this.pending.set(key, attempt);
    try {
      return await attempt;
    } finally {
      this.pending.delete(key);
    }
  }
}
