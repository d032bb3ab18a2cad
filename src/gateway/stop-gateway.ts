import type { Logger } from 'pino';
import type { Platform } from '../platforms/platform.js';
import { settledBy } from '../deadline.js';

/** What a running gateway is made of, as far as stopping it goes. */
export interface StoppableGateway {
  readonly platforms: readonly Pick<Platform, 'close'>[];
  /** The tools' watchers and scheduler: stopped before the pipeline, so nothing new starts while it drains. */
  readonly background?: { stop(): Promise<void> };
  readonly gateway: { stop(timeoutMs: number): Promise<void> };
  readonly server: { close(): Promise<unknown> };
  readonly store: { close(): Promise<void> };
}

/**
 * Stops a gateway in order within one deadline: the platforms' intake first (a long poll
 * confirms its offset), so nothing new arrives while the queue drains; then the tools' background
 * work (timers off; the commands it watches keep running); then the pipeline with
 * the time that is left; then the server and the store. A platform that cannot close in time
 * (an unreachable Bot API holds grammY's last getUpdates) is left behind, and said so.
 */
export async function stopGateway(parts: StoppableGateway, timeoutMs: number, logger: Logger): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const platformsClosed = Promise.all(parts.platforms.map((platform) => platform.close?.())).catch((error: unknown) => {
    logger.error({ err: error }, 'a platform failed to close; stopping the rest');
  });
  if (!(await settledBy(platformsClosed, deadline))) {
    logger.error('a platform did not close within THREADLINE_SHUTDOWN_TIMEOUT_MS; stopping the rest');
  }
  if (parts.background !== undefined) {
    const backgroundStopped = parts.background.stop().catch((error: unknown) => {
      logger.error({ err: error }, 'background work failed to stop; stopping the rest');
    });
    if (!(await settledBy(backgroundStopped, deadline))) {
      logger.error('background work did not stop within THREADLINE_SHUTDOWN_TIMEOUT_MS; stopping the rest');
    }
  }
  await parts.gateway.stop(Math.max(0, deadline - Date.now()));
  await parts.server.close();
  await parts.store.close();
}
