/**
 * A small interleaving timer for sub-microsecond operations.
 *
 * Why not tinybench: it times each task in its own block (all of A, then all of B), so
 * drift, JIT tier-ups, GC pauses and other processes' bursts land on whichever task happens
 * to be running, and it gives per-task statistics only, not the paired per-round
 * differences the "added cost" ratio needs. Here every round times one batch of every case,
 * back to back, and the starting case rotates each round, so slow phases hit all cases alike.
 *
 * Every case's batch is sized to the same duration: a longer batch is more often hit by a
 * preemption on a shared machine, which would bias the medians against the slower case.
 */

/** One alternative: `run(ops)` performs `ops` operations. */
export interface Case {
  readonly name: string;
  readonly run: (ops: number) => void;
}

export interface Plan {
  /** Target duration of one timed batch: far above the ~0.1 µs timer cost, far below a time slice. */
  readonly batchNs: number;
  /** Untimed rounds that size the batches, so timing starts on optimised code. */
  readonly warmupRounds: number;
  readonly rounds: number;
}

export interface Samples {
  /** Nanoseconds per operation, one entry per round. */
  readonly perOp: ReadonlyMap<string, readonly number[]>;
  /** Operations per timed batch. */
  readonly ops: ReadonlyMap<string, number>;
}

function timeBatch(c: Case, ops: number): number {
  const start = process.hrtime.bigint();
  c.run(ops);
  return Number(process.hrtime.bigint() - start) / ops;
}

const order = (cases: readonly Case[], round: number, k: number) => cases[(round + k) % cases.length]!;

/**
 * Untimed interleaved rounds; returns each case's batch size for `plan.batchNs`. Each batch
 * is resized from the previous one's speed, and the final size comes from the median speed
 * of the second half, when the code is optimised.
 */
function warmUp(cases: readonly Case[], plan: Plan): Map<string, number> {
  const ops = new Map(cases.map((c) => [c.name, 1]));
  const warm = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < plan.warmupRounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = order(cases, round, k);
      const nsPerOp = timeBatch(c, ops.get(c.name)!);
      ops.set(c.name, Math.max(1, Math.round(plan.batchNs / nsPerOp)));
      if (round >= plan.warmupRounds / 2) warm.get(c.name)!.push(nsPerOp);
    }
  }
  for (const c of cases) ops.set(c.name, Math.max(1, Math.round(plan.batchNs / median(warm.get(c.name)!))));
  return ops;
}

/** Warms up, then times `plan.rounds` rounds of identical batches. */
export function interleave(cases: readonly Case[], plan: Plan): Samples {
  const ops = warmUp(cases, plan);
  const perOp = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < plan.rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = order(cases, round, k);
      perOp.get(c.name)!.push(timeBatch(c, ops.get(c.name)!));
    }
  }
  return { perOp, ops };
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
  const values = samples.perOp.get(name);
  if (values === undefined) throw new Error(`no samples for ${name}`);
  return values;
}

/** Per-round `a − b`: pairs batches timed moments apart, so drift cancels before the median. */
export function roundDifferences(samples: Samples, a: string, b: string): number[] {
  const bs = series(samples, b);
  return series(samples, a).map((v, i) => v - bs[i]!);
}
