/**
 * `threadline doctor`: what start-up needs, checked without starting: the configuration, the
 * data dir and its lock, the store, the shared Redis when one is set, the Mattermost, Matrix
 * and Discord credentials when set, where telemetry goes, and the context manager. One line
 * per check (a warning marked `!`); exit 1 if any fails. It holds the data-dir lock only while
 * it checks, and writes nothing to Redis.
 */
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { CommanderError, type Command } from 'commander';
import pc from 'picocolors';
import { checkConfiguration } from '../start/check-configuration.js';
import { checkMatrixCredentials } from './doctor-matrix.js';
import { readText } from '../config/read-setting.js';
import { redactRedisUrl } from '../config/redis-url.js';
import { messageOf, ThreadlineError } from '../errors.js';
import { readRedisConfig, type RedisConfig } from '../gateway/gateway-config.js';
import { assertContextPropagation } from '../session/assert-context-propagation.js';
import { readTelemetryConfig, type TelemetryConfig } from '../telemetry/telemetry-config.js';
import { otlpEndpoint } from '../telemetry/otlp-endpoint.js';
import { STORE_FILE } from '../store/store-file.js';
import { safeUrl } from '../text/redact-secrets.js';
import type { CliIo } from './io.js';
import { checkDiscord } from './doctor-discord.js';
import { checkMattermost } from './doctor-mattermost.js';
import { printable } from '../text/printable.js';

/** How long an exporter endpoint gets to accept a TCP connection. */
const CONNECT_TIMEOUT_MS = 2_000;

interface CheckResult {
  readonly ok: boolean;
  /** Passed, with something an operator should fix: marked `!`, and the doctor still exits 0. */
  readonly warning?: true;
  /** One line: what was checked and what was found. */
  readonly line: string;
}

export interface DoctorOptions {
  /** Registers the context manager and propagators; the telemetry bootstrap's own by default. */
  readonly installContext?: (config: TelemetryConfig | undefined) => void | Promise<void>;
}

export function registerDoctor(program: Command, io: CliIo, options: DoctorOptions = {}): void {
  program
    .command('doctor')
    .description('check what start-up needs: configuration, data dir and lock, store, Redis, Discord, telemetry endpoint, context manager')
    .action(async () => {
      const results = await runDoctor(io.env, options);
      const colors = pc.createColors(io.color === true);
      for (const result of results) {
        const mark = !result.ok ? colors.red('✗') : result.warning ? colors.yellow('!') : colors.green('✓');
        io.out(`${mark} ${printable(result.line)}\n`);
      }
      const failed = results.filter((result) => !result.ok).length;
      if (failed === 0) return;
      io.err(`threadline: ${failed} ${failed === 1 ? 'check' : 'checks'} failed\n`);
      throw new CommanderError(1, 'threadline.failed', `${failed} checks failed`);
    });
}

/** Every check, in order; a check whose input is unusable says so and fails. */
async function runDoctor(env: NodeJS.ProcessEnv, options: DoctorOptions = {}): Promise<CheckResult[]> {
  const results: CheckResult[] = [checkConfigurationValid(env)];
  const dataDir = resolve(readText(env, 'THREADLINE_DATA_DIR'));
  const writable = checkWritableDir(dataDir, 'data dir');
  results.push(writable);
  if (writable.ok) results.push(...(await checkLockAndStore(dataDir)));
  else results.push({ ok: false, line: `store not checked: the data dir ${dataDir} is unusable` });
  results.push(...(await checkRedisBackend(env)));
  results.push(...(await checkMattermost(env)));
  results.push(...(await checkMatrixCredentials(env)));
  results.push(...(await checkDiscord(env)));
  const telemetry = telemetryConfigOf(env);
  if (telemetry === undefined) {
    results.push({ ok: false, line: 'telemetry endpoints not checked: the telemetry configuration is invalid' });
  } else {
    results.push(await checkTraceExporter(env, telemetry), await checkMetricsExporter(env, telemetry));
  }
  results.push(await checkContextManager(telemetry, options.installContext ?? installBootstrapContext));
  return results;
}

function checkConfigurationValid(env: NodeJS.ProcessEnv): CheckResult {
  const errors = checkConfiguration(env);
  if (errors.length === 0) return { ok: true, line: 'configuration valid' };
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more: threadline config)` : '';
  return { ok: false, line: `configuration invalid: ${errors[0]!.message} [${errors[0]!.code}]${more}` };
}

function telemetryConfigOf(env: NodeJS.ProcessEnv): TelemetryConfig | undefined {
  try {
    return readTelemetryConfig(env);
  } catch (error) {
    if (error instanceof ThreadlineError) return undefined;
    throw error;
  }
}

/**
 * `dir` is a directory this process can write to, or can be created: proven by writing a
 * file, since access() says yes to root even where a write fails. What it creates it removes.
 */
function checkWritableDir(dir: string, what: string): CheckResult {
  let created: string | undefined;
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory()) return { ok: false, line: `${what} ${dir} is not a directory` };
    created = mkdirSync(dir, { recursive: true });
    const probe = join(dir, `.threadline-doctor-${process.pid}`);
    writeFileSync(probe, '');
    unlinkSync(probe);
    return { ok: true, line: `${what} ${dir} is writable${created === undefined ? '' : ' (can be created)'}` };
  } catch (error) {
    return { ok: false, line: `${what} ${dir} is not writable: ${messageOf(error)}` };
  } finally {
    if (created !== undefined) removeCreated(created, dir);
  }
}

/**
 * The directories mkdir created, from `leaf` up to `first`, each only while empty: whatever
 * appeared in them meanwhile (a gateway starting on the same data dir) stays.
 */
function removeCreated(first: string, leaf: string): void {
  for (let path = leaf; ; path = dirname(path)) {
    try {
      rmdirSync(path);
    } catch {
      return;
    }
    if (path === first || dirname(path) === path) return;
  }
}

/** The lock as the gateway takes it, then the store opened under it; both released. */
async function checkLockAndStore(dataDir: string): Promise<CheckResult[]> {
  const storePath = join(dataDir, STORE_FILE);
  if (!existsSync(dataDir)) {
    return [{ ok: true, line: `data dir not locked (it does not exist yet)` }, await checkNewStore(storePath)];
  }
  // Loaded here: better-sqlite3 is native, and `config` or `--help` should not need it.
  const { acquireDataDirLock } = await import('../store/data-dir-lock.js');
  let release: () => void;
  try {
    release = acquireDataDirLock(dataDir).release;
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    const lock = { ok: false, line: `data dir not locked: ${error.message} [${error.code}]` };
    // A running gateway's store opens beside it (WAL), as `threadline deliveries` does.
    return [lock, existsSync(storePath) ? await checkStore(storePath) : await checkNewStore(storePath)];
  }
  try {
    return [
      { ok: true, line: 'data dir not locked by a running gateway' },
      existsSync(storePath) ? await checkStore(storePath) : await checkNewStore(storePath),
    ];
  } finally {
    release();
  }
}

async function checkStore(path: string): Promise<CheckResult> {
  const { SqliteStore } = await import('../store/sqlite-store.js');
  try {
    const store = await SqliteStore.open(path);
    await store.close();
    return { ok: true, line: `store ${path} opens` };
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return { ok: false, line: `store ${path} does not open: ${error.message} [${error.code}]` };
  }
}

/** No store yet (the first start creates it): one is opened in a temporary dir, to prove SQLite loads. */
async function checkNewStore(path: string): Promise<CheckResult> {
  const scratch = mkdtempSync(join(tmpdir(), 'threadline-doctor-'));
  try {
    const result = await checkStore(join(scratch, STORE_FILE));
    return result.ok ? { ok: true, line: `store ${path} does not exist yet; a new store opens` } : result;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function checkTraceExporter(env: NodeJS.ProcessEnv, config: TelemetryConfig): Promise<CheckResult> {
  switch (config.exporter) {
    case 'file': {
      const result = checkWritableDir(dirname(resolve(config.traceFile)), 'trace file directory');
      return { ok: result.ok, line: `traces to file ${config.traceFile}: ${result.line}` };
    }
    case 'otlp':
      return checkReachable('traces', new URL(otlpEndpoint('traces', config.otlpProtocol, env)));
    default:
      return { ok: true, line: `traces to ${config.exporter}: nothing to check` };
  }
}

async function checkMetricsExporter(env: NodeJS.ProcessEnv, config: TelemetryConfig): Promise<CheckResult> {
  const metrics = config.metrics;
  switch (metrics.exporter) {
    case 'prometheus':
      return checkPortFree(metrics.prometheusHost, metrics.prometheusPort);
    case 'otlp':
      return checkReachable('metrics', new URL(otlpEndpoint('metrics', metrics.otlpProtocol, env)));
    default:
      return { ok: true, line: `metrics to ${metrics.exporter}: nothing to check` };
  }
}


/**
 * With THREADLINE_REDIS_URL set: Redis answers, and holds work safely (checkRedis): one line
 * for what was found, then one per problem (failed) and per warning. Nothing when unset.
 */
async function checkRedisBackend(env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  let config: RedisConfig | undefined;
  try {
    config = readRedisConfig(env);
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return [{ ok: false, line: 'redis not checked: the Redis settings are invalid' }];
  }
  if (config === undefined) return [];
  const where = `redis ${redactRedisUrl(config.url)}`;
  // Loaded here: only a gateway on Redis needs ioredis.
  const [{ connectRedis }, { checkRedis }, { RedisKeys }] = await Promise.all([
    import('../store/redis/redis-connection.js'),
    import('../store/redis/redis-requirements.js'),
    import('../store/redis/redis-keys.js'),
  ]);
  let redis: Awaited<ReturnType<typeof connectRedis>>;
  try {
    redis = await connectRedis(config.url, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return [{ ok: false, line: `${where}: ${error.message} [${error.code}]` }];
  }
  try {
    const { problems, warnings, facts } = await checkRedis(redis, { keys: new RedisKeys(config.prefix) });
    const legacy = facts.storedPartitions === null ? '' : `; an earlier version's ${facts.storedPartitions} partitions are moved into mailboxes at start`;
    const summary =
      `${where}: reachable, Redis ${facts.version ?? '(version not reported)'}, maxmemory-policy ${facts.evictionPolicy ?? '(not reported)'}, ` +
      `AOF ${facts.aofEnabled === undefined ? '(not reported)' : facts.aofEnabled === '1' ? 'on' : 'off'}, ` +
      `under prefix ${config.prefix}${legacy}`;
    return [
      { ok: problems.length === 0, line: summary },
      ...problems.map((problem) => ({ ok: false, line: `redis: ${problem} [TL_REDIS_UNSUITABLE]` })),
      ...warnings.map((warning): CheckResult => ({ ok: true, warning: true, line: `redis: ${warning}` })),
    ];
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return [{ ok: false, line: `${where}: ${error.message} [${error.code}]` }];
  } finally {
    redis.disconnect();
  }
}

/** A TCP connection to the endpoint's host and port is accepted in time. */
function checkReachable(signal: string, endpoint: URL): Promise<CheckResult> {
  const port = Number(endpoint.port || (endpoint.protocol === 'https:' ? 443 : 80));
  const host = endpoint.hostname.replace(/^\[|\]$/g, '');
  const where = `${signal} to otlp ${safeUrl(endpoint)}`;
  return new Promise((resolvePromise) => {
    const socket = connect({ host, port, timeout: CONNECT_TIMEOUT_MS });
    const done = (result: CheckResult) => {
      socket.destroy();
      resolvePromise(result);
    };
    socket.once('connect', () => done({ ok: true, line: `${where}: ${host}:${port} accepts connections` }));
    socket.once('timeout', () => done({ ok: false, line: `${where}: ${host}:${port} did not answer within ${CONNECT_TIMEOUT_MS} ms` }));
    socket.once('error', (error) => done({ ok: false, line: `${where}: ${host}:${port} cannot be reached: ${messageOf(error)}` }));
  });
}

/** The Prometheus scrape port can be bound: nothing else listens there. */
function checkPortFree(host: string, port: number): Promise<CheckResult> {
  const where = `metrics to prometheus on ${host}:${port}`;
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', (error) => resolvePromise({ ok: false, line: `${where}: the port cannot be bound: ${messageOf(error)}` }));
    server.listen(port, host, () => server.close(() => resolvePromise({ ok: true, line: `${where}: the port is free` })));
  });
}

/** As the telemetry bootstrap registers them when there is no exporter; loaded here, so `start` loads none of it first. */
async function installBootstrapContext(config: TelemetryConfig | undefined): Promise<void> {
  const { createPropagator, installContext } = await import('../telemetry/index.js');
  installContext(config === undefined ? createPropagator() : createPropagator(config));
}

async function checkContextManager(
  config: TelemetryConfig | undefined,
  install: (config: TelemetryConfig | undefined) => void | Promise<void>,
): Promise<CheckResult> {
  try {
    await install(config);
    await assertContextPropagation();
    return { ok: true, line: 'context manager active: session routing survives an await and a timer' };
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return { ok: false, line: `context manager not active: ${error.message} [${error.code}]` };
  }
}
