import type { Clock } from '../clock.js';

interface Entry<T> {
  readonly at: number;
  readonly seq: number;
  readonly item: T;
}

/**
 * Many items due at their own times, on ONE clock timer armed for the earliest: thousands of
 * watchers cost a heap entry each, not a timer each. `fire` gets every item due, in time order.
 */
export class SharedSchedule<T> {
  private readonly heap: Entry<T>[] = [];
  private seq = 0;
  private cancel: (() => void) | undefined;
  private armedAt = Infinity;
  private firing = false;
  private running = false;

  constructor(
    private readonly clock: Clock,
    private readonly fire: (due: T[]) => Promise<void>,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  /** Starts firing (items added before wait until now). */
  start(): void {
    this.running = true;
    this.arm();
  }

  /** Cancels the timer; the items stay, for a start again. */
  stop(): void {
    this.running = false;
    this.cancel?.();
    this.cancel = undefined;
    this.armedAt = Infinity;
  }

  add(at: number, item: T): void {
    this.push({ at, seq: this.seq++, item });
    this.arm();
  }

  private arm(): void {
    const next = this.heap[0];
    if (!this.running || this.firing || next === undefined || next.at >= this.armedAt) return;
    this.cancel?.();
    this.armedAt = next.at;
    this.cancel = this.clock.at(next.at, () => this.onTimer());
  }

  private async onTimer(): Promise<void> {
    this.cancel = undefined;
    this.armedAt = Infinity;
    this.firing = true;
    try {
      const now = this.clock.now();
      const due: T[] = [];
      while (this.heap[0] !== undefined && this.heap[0].at <= now) due.push(this.pop().item);
      if (due.length > 0) await this.fire(due);
    } finally {
      this.firing = false;
      this.arm();
    }
  }

  private push(entry: Entry<T>): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!before(heap[index]!, heap[parent]!)) break;
      [heap[index], heap[parent]] = [heap[parent]!, heap[index]!];
      index = parent;
    }
  }

  private pop(): Entry<T> {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let index = 0;
      for (;;) {
        const left = index * 2 + 1;
        const right = left + 1;
        let smallest = index;
        if (left < heap.length && before(heap[left]!, heap[smallest]!)) smallest = left;
        if (right < heap.length && before(heap[right]!, heap[smallest]!)) smallest = right;
        if (smallest === index) break;
        [heap[index], heap[smallest]] = [heap[smallest]!, heap[index]!];
        index = smallest;
      }
    }
    return top;
  }
}

function before<T>(a: Entry<T>, b: Entry<T>): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
