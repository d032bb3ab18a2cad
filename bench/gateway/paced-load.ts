/**
 * An open-loop load generator: messages leave at a fixed rate whatever the server answers,
 * as users' messages do, and each latency runs from the moment its message was due, so a
 * server that stalls is charged for the messages that waited behind it. (autocannon's rate
 * option sends each second's quota in a burst, then waits for the next second.)
 */
import { Pool } from 'undici';

export interface PacedRun<Snapshot> {
  /** Messages sent in the window (rate × window seconds). */
  readonly windowMessages: number;
  /** Snapshots taken as the window opened and as it closed. */
  readonly before: Snapshot;
  readonly after: Snapshot;
  /** Latencies (ms, due time to answer) of the window's messages, sorted. */
  readonly latenciesMs: Float64Array;
  /** Window answers other than 2xx, and requests that failed. */
  readonly refused: number;
  readonly failed: number;
  /** 2xx answers over the whole run, warm-up included. */
  readonly accepted: number;
}

export interface PacedPlan<Snapshot> {
  readonly url: string;
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly windowSeconds: number;
  /** The request body of message n. */
  readonly body: (n: number) => string;
  /** Called as the window opens and closes, before the next message leaves. */
  readonly snapshot: () => Snapshot;
}

const TICK_MS = 2;

export async function offerLoad<Snapshot>(plan: PacedPlan<Snapshot>): Promise<PacedRun<Snapshot>> {
  const target = new URL(plan.url);
  // Enough connections that a stalled server queues messages here, in sight of the latencies.
  const pool = new Pool(target.origin, { connections: 128 });
  const warmup = Math.round(plan.rate * plan.warmupSeconds);
  const total = warmup + Math.round(plan.rate * plan.windowSeconds);
  const latencies = new Float64Array(total - warmup);
  let refused = 0;
  let failed = 0;
  let accepted = 0;
  let sent = 0;
  let answered = 0;
  let before: Snapshot | undefined;
  let after: Snapshot | undefined;
  const started = performance.now();
  const dueAt = (n: number) => started + (n * 1000) / plan.rate;

  const send = (n: number) => {
    pool
      .request({ path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body: plan.body(n) })
      .then(async ({ statusCode, body }) => {
        await body.dump();
        const ok = statusCode >= 200 && statusCode < 300;
        if (ok) accepted++;
        if (n >= warmup) {
          latencies[n - warmup] = performance.now() - dueAt(n);
          if (!ok) refused++;
        }
      })
      .catch(() => {
        if (n >= warmup) failed++;
      })
      .finally(() => answered++);
  };

  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - started) * plan.rate) / 1000) + 1);
      while (sent < due) {
        if (sent === warmup) before = plan.snapshot();
        send(sent++);
      }
      // The window closes when a next message would have been due, so it spans windowMessages intervals.
      if (sent === total && performance.now() >= dueAt(total)) {
        after = plan.snapshot();
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  while (answered < total) await new Promise((resolve) => setTimeout(resolve, 5));
  await pool.close();
  return { windowMessages: total - warmup, before: before!, after: after!, latenciesMs: latencies.sort(), refused, failed, accepted };
}
