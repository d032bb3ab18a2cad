/**
 * The telemetry bootstrap, loaded before the application with
 * `node --import threadline/telemetry/register` so instrumentations patch modules before
 * anything loads them. Fails the process at start-up, not at the first message, when the
 * configuration is unusable, context does not propagate or metrics cannot be served.
 */
import { assertContextPropagation } from '../session/index.js';
import { exitOnStartupError } from '../startup-failure.js';
import { startTelemetry, type Telemetry } from './start-telemetry.js';

export const telemetry: Telemetry = await start();

async function start(): Promise<Telemetry> {
  try {
    const started = startTelemetry();
    await assertContextPropagation();
    // A Prometheus port already taken stops start-up here, as a bad setting does.
    await started.metricsReady;
    return started;
  } catch (error) {
    exitOnStartupError(error);
  }
}
