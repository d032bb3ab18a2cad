/**
 * A bounded set of recently seen keys, oldest evicted first: AcceptOnce's memory of the
 * messages platforms delivered, with fixed memory.
 */
export class RecentKeys {
  private readonly keys = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** True the first time a key is seen (while it is remembered). */
  firstSight(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.values().next().value!);
    return true;
  }

  /** Forgets a key, so its next sight counts as the first (the first one was not handled). */
  forget(key: string): void {
    this.keys.delete(key);
  }
}
