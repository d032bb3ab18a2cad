import type { Logger } from 'pino';

/**
 * Stops the gateway, flushes spans and metrics, exits: 0 after a clean stop, 1 if a step
 * failed. Spans are flushed even when stopping failed, since that trace is the one somebody
 * will read.
 */
export async function stopThenExit(
  gateway: { stop(): Promise<void> },
  telemetry: { shutdown(): Promise<void> },
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): Promise<void> {
  let code = 0;
  try {
    await gateway.stop();
  } catch (error) {
    code = 1;
    logger.error({ err: error }, 'stopping failed; what did not finish runs again at the next start');
  }
  try {
    await telemetry.shutdown();
  } catch (error) {
    code = 1;
    logger.error({ err: error }, 'spans or metrics could not be flushed at shutdown');
  }
  exit(code);
}
