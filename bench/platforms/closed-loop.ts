/**
 * A closed-loop load for `bench:platforms`: messages go out while fewer than `inFlight` wait
 * for their reply, and a run ends when the fake has every reply. The gateway's CPU is read
 * from /proc as the run opens and once the last reply is in.
 */
import { cpuTime } from '../gateway/cpu-time.js';
import { placeOf, type PlatformDriver } from './platform-drivers.js';

export interface PlatformRun {
  /** Gateway CPU a message, µs: the whole process, and its event loop alone. */
  readonly cpuUs: number;
  readonly eventLoopUs: number;
  readonly messagesPerSecond: number;
  /** The gateway's calls to the fake a message, by name. */
  readonly callsPerMessage: ReadonlyMap<string, number>;
}

export interface RunPlan {
  readonly messages: number;
  readonly inFlight: number;
  /** The first message's number: message numbers (and the platforms' message ids) never repeat on one gateway. */
  readonly from: number;
  readonly timeoutMs: number;
}

export async function runClosedLoop(driver: PlatformDriver, gateway: { readonly url: string; readonly pid: number }, plan: RunPlan): Promise<PlatformRun> {
  const repliesBefore = driver.replies();
  const callsBefore = driver.calls().length;
  let sent = 0;
  let failure: unknown;
  let wake = () => {};
  const answered = () => driver.replies() - repliesBefore;
  driver.onReply(() => wake());
  const before = cpuTime(gateway.pid);
  const startedNs = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${driver.name}: ${answered()} of ${plan.messages} replies within ${plan.timeoutMs} ms`)), plan.timeoutMs);
    wake = () => {
      if (failure !== undefined) return reject(failure);
      if (answered() >= plan.messages) {
        clearTimeout(timer);
        wake = () => {};
        return resolve();
      }
      while (sent < plan.messages && sent - answered() < plan.inFlight) {
        const n = plan.from + sent++;
        driver.send(gateway.url, n, placeOf(n), `bench message ${n}`).catch((error: unknown) => {
          failure = error;
          clearTimeout(timer);
          reject(error);
        });
      }
    };
    wake();
  });
  const seconds = Number(process.hrtime.bigint() - startedNs) / 1e9;
  const after = cpuTime(gateway.pid);
  if (driver.replies() - repliesBefore !== plan.messages) throw new Error(`${driver.name}: ${driver.replies() - repliesBefore} replies to ${plan.messages} messages`);
  const calls = new Map<string, number>();
  for (const call of driver.calls().slice(callsBefore)) calls.set(call, (calls.get(call) ?? 0) + 1);
  return {
    callsPerMessage: new Map([...calls].map(([name, count]) => [name, count / plan.messages])),
    cpuUs: (after.totalUs - before.totalUs) / plan.messages,
    eventLoopUs: (after.mainUs - before.mainUs) / plan.messages,
    messagesPerSecond: plan.messages / seconds,
  };
}
