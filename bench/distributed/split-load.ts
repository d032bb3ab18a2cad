/**
 * The open-loop load of bench/gateway/paced-load.ts, spread over several instances (message n
 * to each in turn, a chat's messages alternating between them, as behind a load balancer),
 * noting when each window message's 202 came back (CLOCK_MONOTONIC µs), so the time to its
 * reply can be read against the receiver's clock.
 */
import { Pool } from 'undici';

export interface SplitPlan<Snapshot> {
  /** The instances' base URLs; messages go to each in turn. */
  readonly urls: readonly string[];
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly windowSeconds: number;
  /** The request body of message n; its reply must be told apart by n (the echo's text). */
  readonly body: (n: number) => string;
  /** Called as the window opens and closes, before the next message leaves. */
  readonly snapshot: () => Snapshot;
}

export interface SplitRun<Snapshot> {
  /** Message number of the window's first message; the window holds `acceptedAtUs.length`. */
  readonly firstWindowMessage: number;
  readonly before: Snapshot;
  readonly after: Snapshot;
  /** When each window message's 202 arrived, CLOCK_MONOTONIC µs; NaN when it was not accepted. */
  readonly acceptedAtUs: Float64Array;
  /** Window answers other than 2xx, and requests that failed. */
  readonly refused: number;
  readonly failed: number;
  /** 2xx answers over the whole run, warm-up included: the replies to wait for. */
  readonly accepted: number;
}

const TICK_MS = 2;
/** Enough per instance that a stalled one queues messages here, not in a connection limit. */
const CONNECTIONS_PER_INSTANCE = 64;

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * The instance of message n among `instances`: each in turn, shifted by one every `chats`
 * messages, so that with messages going round `chats` chats a chat does not stick to one
 * instance (chat = n mod chats would otherwise always meet the same one).
 */
export function instanceOf(n: number, instances: number, chats: number): number {
  return (n + Math.floor(n / chats)) % instances;
}

export async function offerSplitLoad<Snapshot>(plan: SplitPlan<Snapshot>, chats: number): Promise<SplitRun<Snapshot>> {
  const targets = plan.urls.map((url) => new Pool(new URL(url).origin, { connections: CONNECTIONS_PER_INSTANCE }));
  const warmup = Math.round(plan.rate * plan.warmupSeconds);
  const total = warmup + Math.round(plan.rate * plan.windowSeconds);
  const acceptedAtUs = new Float64Array(total - warmup).fill(Number.NaN);
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
    targets[instanceOf(n, targets.length, chats)]!
      .request({ path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json' }, body: plan.body(n) })
      .then(async ({ statusCode, body }) => {
        const atUs = monotonicUs();
        await body.dump();
        const ok = statusCode >= 200 && statusCode < 300;
        if (ok) accepted++;
        if (n >= warmup) {
          if (ok) acceptedAtUs[n - warmup] = atUs;
          else refused++;
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
      // The window closes when a next message would have been due, so it spans its messages' intervals.
      if (sent === total && performance.now() >= dueAt(total)) {
        after = plan.snapshot();
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  while (answered < total) await new Promise((resolve) => setTimeout(resolve, 5));
  await Promise.all(targets.map((pool) => pool.close()));
  return { firstWindowMessage: warmup, before: before!, after: after!, acceptedAtUs, refused, failed, accepted };
}
