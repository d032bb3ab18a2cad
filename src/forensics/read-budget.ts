/**
 * The bytes one command may read from a trace store in all, across every answer and however
 * many run at once: a hostile or runaway store cannot make the command hold more than this.
 */
export class ReadBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** Counts `bytes` read; false once the total is past the budget (and from then on). */
  take(bytes: number): boolean {
    this.used += bytes;
    return this.used <= this.maxBytes;
  }

  /** True once a read went past the budget: nothing more is read. */
  get spent(): boolean {
    return this.used > this.maxBytes;
  }
}
