/**
 * The three set-ups the distributed bench compares, each gateway a process of its own running
 * the built dist as `npm start` does: one embedded instance (SQLite in its data dir), one
 * instance on Redis, and two instances on one Redis sharing the work. Each Redis set-up has a
 * redis-server of its own, so the Redis CPU read in a window is that set-up's alone.
 */
import { join, resolve } from 'node:path';
import { root, startServer, stopServer, type RunningServer, type ServerSpec } from '../gateway/servers.js';
import { startBenchRedis, type BenchRedis } from './redis-server.js';

export type ConfigurationName = 'embedded' | 'redis_1' | 'redis_2';

export interface Configuration {
  readonly name: ConfigurationName;
  readonly label: string;
  readonly gateways: readonly RunningServer[];
  /** The set-up's redis-server; none when embedded. */
  readonly redis?: BenchRedis | undefined;
}

export interface ConfigurationOptions {
  readonly deliveryUrl: string;
  /** The threadline build to run (a dist directory, relative to the repository). */
  readonly dist: string;
  /** false: OTEL_SDK_DISABLED; true: as `npm start` has it, spans to the trace file. */
  readonly telemetry: boolean;
  readonly redisAppendonly: boolean;
  /** BENCH_CPU_PROF_DIR: each gateway writes a V8 CPU profile there (`--cpu-prof`) when it stops. */
  readonly cpuProfileDir?: string | undefined;
}

/** A gateway process of the bench: the build, the delivery receiver, telemetry as asked, `env` on top. */
export function gatewaySpec(name: string, options: ConfigurationOptions, env: Readonly<Record<string, string>>): ServerSpec {
  const dist = resolve(root, options.dist);
  return {
    name,
    label: name,
    args: [
      ...(options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(options.cpuProfileDir, name)}`]),
      '--import',
      join(dist, 'telemetry/register.js'),
      join(dist, 'cli/main.js'),
    ],
    env: {
      THREADLINE_WEBHOOK_DELIVERY_URL: options.deliveryUrl,
      THREADLINE_LOG_LEVEL: 'warn',
      // A burst behind a slow round must wait, not be refused: every message is counted.
      THREADLINE_QUEUE_CAPACITY: '100000',
      PORT: '0',
      HOST: '127.0.0.1',
      ...(options.telemetry ? {} : { OTEL_SDK_DISABLED: 'true' }),
      ...env,
    },
    dataDirVariable: 'THREADLINE_DATA_DIR',
  };
}

async function onRedis(name: 'redis_1' | 'redis_2', instances: number, options: ConfigurationOptions): Promise<Configuration> {
  const redis = await startBenchRedis({ appendonly: options.redisAppendonly });
  const shared = { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: `bench-${name}` };
  const gateways = await Promise.all(
    Array.from({ length: instances }, (_, i) => startServer(gatewaySpec(`${name}-${i + 1}`, options, { ...shared, THREADLINE_INSTANCE_ID: `${name}-${i + 1}` }))),
  );
  const label = instances === 1 ? 'one instance on Redis' : `${instances} instances on one Redis`;
  return { name, label, gateways, redis };
}

/** Starts every set-up's processes; they run until stopConfigurations. */
export async function startConfigurations(options: ConfigurationOptions): Promise<Configuration[]> {
  const embedded: Configuration = { name: 'embedded', label: 'one embedded instance (SQLite)', gateways: [await startServer(gatewaySpec('embedded', options, {}))] };
  return [embedded, await onRedis('redis_1', 1, options), await onRedis('redis_2', 2, options)];
}

/** Gateways first (SIGTERM, as a supervisor stops them), then their Redis. */
export async function stopConfigurations(configurations: readonly Configuration[]): Promise<void> {
  for (const configuration of configurations) {
    for (const gateway of configuration.gateways) await stopServer(gateway);
    await configuration.redis?.stop();
  }
}
