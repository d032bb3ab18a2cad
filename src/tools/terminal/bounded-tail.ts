/** The last `limit` characters of a stream of text, and how many came before them: memory never holds more. */
export class BoundedTail {
  private text = '';
  private total = 0;

  constructor(private readonly limit: number) {}

  append(chunk: string): void {
    this.total += chunk.length;
    // Only the chunk's own tail can survive: a 64 KiB read never grows the kept text past the limit.
    const fresh = chunk.length > this.limit ? chunk.slice(-this.limit) : chunk;
    const joined = this.text + fresh;
    this.text = joined.length > this.limit ? joined.slice(-this.limit) : joined;
  }

  /** The kept text. */
  get tail(): string {
    return this.text;
  }

  /** Characters dropped from the front. */
  get dropped(): number {
    return this.total - this.text.length;
  }
}
