import { RecentKeys } from './recent-keys.js';

/**
 * Hands each platform message to intake once, though platforms deliver again whatever they
 * saw no answer for. A redelivery that arrives while the first delivery is still being
 * accepted waits for its outcome: answered "duplicate" at once, it would be lost if that
 * first accept then failed (Slack counts a 200 as delivered). A failed accept is forgotten,
 * so the next delivery is taken.
 */
export class AcceptOnce {
  private readonly seen: RecentKeys;
  private readonly pending = new Map<string, Promise<unknown>>();

  /** `capacity`: how many recent keys are remembered. */
  constructor(capacity: number) {
    this.seen = new RecentKeys(capacity);
  }

  /** What `accept` returned, or undefined for a message already taken. */
  async accept<T>(key: string, accept: () => Promise<T>): Promise<T | undefined> {
    for (let first = this.pending.get(key); first !== undefined; first = this.pending.get(key)) {
      await first.catch(() => {});
    }
    if (!this.seen.firstSight(key)) return undefined;
    // Called inside an async function, so one that throws at once still fails only this attempt.
    const attempt = (async () => accept())();
    this.pending.set(key, attempt);
    try {
      return await attempt;
    } catch (error) {
      this.seen.forget(key);
      throw error;
    } finally {
      this.pending.delete(key);
    }
  }
}
