/**
 * The gateway process (`threadline start`, `npm start`, the image's CMD): the gateway with its
 * defaults (webhook platform, SQLite and a trace file in the data dir), one banner line, and a
 * clean stop on SIGTERM or SIGINT.
 */
import { scrubSecrets } from '../config/scrub-secrets.js';
import { readGatewayConfig } from '../gateway/gateway-config.js';
import { startGateway, type RunningGateway } from '../start/start-gateway.js';
import { loadGatewayModule } from '../start/gateway-module.js';
import { exitOnStartupError } from '../startup-failure.js';
import { stopThenExit } from './stop-then-exit.js';
import { describeExporter } from '../telemetry/index.js';
import { telemetry } from '../telemetry/register.js';
import { describeMetrics } from '../telemetry/start-metrics.js';

const logger = telemetry.logger;
let running: RunningGateway;
let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'stopping: intake closed, finishing work');
  await stopThenExit(running, telemetry, logger);
}

try {
  const config = readGatewayConfig();
  const { path: modulePath, ...module } = await loadGatewayModule();
  if (modulePath !== undefined) logger.info({ module: modulePath }, 'gateway module loaded');
  running = await startGateway(config, { logger, ...module });
  // Before the banner: whoever reads it may signal at once, and a signal without a listener
  // kills. on, not once: Ctrl-C under `npm start` arrives twice (from the terminal, and
  // forwarded by npm), and a second signal with no listener would kill the drain.
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The bootstrap has awaited it: the scrape URL, or undefined, at once.
  const scrapeUrl = await telemetry.metricsReady;
  // Every exporter and platform has read them by now: what the process starts later does not inherit them.
  scrubSecrets();
  console.log(
    `threadline ready · listening on ${running.url} · ${running.platforms.map((p) => p.describe(running.url)).join(' · ')} · ` +
      `store ${config.dataDir} · traces ${describeExporter(telemetry.config)} · metrics ${describeMetrics(telemetry.config.metrics, scrapeUrl)}`,
  );
} catch (error) {
  exitOnStartupError(error);
}
