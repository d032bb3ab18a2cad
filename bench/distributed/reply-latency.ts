/**
 * Time from a message's 202 to its reply reaching the receiver: what a user waits after the
 * gateway took the message, and where a queue hop between instances shows. Both clocks are
 * CLOCK_MONOTONIC (process.hrtime in two processes of one machine), so the times subtract.
 */

export interface ReplyLatencies {
  /** Milliseconds, sorted, one per window message that was accepted and answered. */
  readonly sortedMs: Float64Array;
  /** Accepted window messages whose reply never arrived: must be 0, or the round is wrong. */
  readonly missing: number;
}

/**
 * Pairs each accepted window message (`acceptedAtUs[i]` is message `first + i`; NaN when it was
 * refused) with its reply's arrival, found by `textOf(n)` in `arrivals`.
 */
export function replyLatencies(
  acceptedAtUs: Float64Array,
  first: number,
  arrivals: ReadonlyMap<string, number>,
  textOf: (n: number) => string,
): ReplyLatencies {
  const latencies: number[] = [];
  let missing = 0;
  acceptedAtUs.forEach((acceptedUs, i) => {
    if (Number.isNaN(acceptedUs)) return;
    const arrivedUs = arrivals.get(textOf(first + i));
    if (arrivedUs === undefined) missing++;
    else latencies.push((arrivedUs - acceptedUs) / 1000);
  });
  return { sortedMs: Float64Array.from(latencies).sort(), missing };
}
