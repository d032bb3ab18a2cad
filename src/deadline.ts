/**
 * Waits for `work` until `deadline` (ms since the epoch), whichever comes first; true if the
 * work settled in time. Shutdown measures every step against one deadline, so the grace
 * period an orchestrator gives between SIGTERM and SIGKILL holds however many steps there are.
 */
export async function settledBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()), false)));
  try {
    return await Promise.race([work.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
