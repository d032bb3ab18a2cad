import type { Logger } from 'pino';

/**
 * Store writes that no caller waits for: bookkeeping after the work it records is already
 * done (a delivery marked sent, a message marked finished), kept off the turn's critical
 * path. A failure is logged, never thrown; shutdown waits for all of them (`drained`).
 */
export class BackgroundWrites {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  /** `failure` is what a lost write means for the user, logged with `fields`. */
  add(write: Promise<unknown>, failure: string, fields: Record<string, unknown>): void {
    const tracked: Promise<void> = write.then(
      () => void this.pending.delete(tracked),
      (error: unknown) => {
        this.pending.delete(tracked);
        this.logger.error({ err: error, ...fields }, failure);
      },
    );
    this.pending.add(tracked);
  }

  /** Resolves once every write added so far has settled. */
  async drained(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}
