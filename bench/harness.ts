/**
 * A small interleaving timer for sub-microsecond operations.
 *
 * Why not tinybench: it times each task in its own block (all of A, then all of B), so
 * drift, JIT tier-ups and GC pauses land on whichever task happens to be running, and it
 * gives per-task statistics only, not the paired per-round differences the "added cost"
 * ratios need. Here every round times one batch of every case, back to back, and the
 * starting case rotates each round, so slow phases hit all cases alike.
 */

/** One alternative: `run(ops)` performs `ops` operations. */
export interface Case {
  readonly name: string;
  readonly run: (ops: number) => void;
}

export interface Plan {
  /** Operations per timed batch: enough that the ~50 ns timer read is noise. */
  readonly ops: number;
  /** Untimed rounds first, so every case runs optimised code when timing starts. */
  readonly warmupRounds: number;
  readonly rounds: number;
}

/** Nanoseconds per operation, one entry per round, keyed by case name. */
export type Samples = ReadonlyMap<string, readonly number[]>;

export function interleave(cases: readonly Case[], plan: Plan): Samples {
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = -plan.warmupRounds; round < plan.rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(((round % cases.length) + cases.length + k) % cases.length)]!;
      const start = process.hrtime.bigint();
      c.run(plan.ops);
      const elapsed = Number(process.hrtime.bigint() - start);
      if (round >= 0) samples.get(c.name)!.push(elapsed / plan.ops);
    }
  }
  return samples;
}

export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export function series(samples: Samples, name: string): readonly number[] {
  const values = samples.get(name);
  if (values === undefined) throw new Error(`no samples for ${name}`);
  return values;
}

/** Per-round `a − b`: pairs batches timed moments apart, so drift cancels before the median. */
export function roundDifferences(samples: Samples, a: string, b: string): number[] {
  const bs = series(samples, b);
  return series(samples, a).map((v, i) => v - bs[i]!);
}
