import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ThreadlineError } from '../errors.js';
import type { BackendSuitability } from '../gateway/gateway-options.js';
import { checkRedis, unsuitable, type RedisRequirements } from '../store/redis/redis-requirements.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';

export interface RedisSuitabilityWatchOptions {
  /** The commands' connection: a check fails fast while Redis is away. */
  readonly redis: Redis;
  readonly requirements: RedisRequirements;
  /** THREADLINE_REDIS_CHECK_INTERVAL_MS. */
  readonly everyMs: number;
  readonly logger: Logger;
  /** What start-up logged already: not logged again while it lasts. */
  readonly warnings: readonly string[];
}

/**
 * What start-up checked of Redis (assertRedisSuitable), checked again every `everyMs` while
 * the gateway runs: a `CONFIG SET maxmemory-policy allkeys-lru` made later would otherwise let
 * a full Redis evict accepted messages and deliveries without a word. While Redis is unsuitable
 * problem() says why, so intake refuses and /v1/ready answers 503; turning so is logged once as
 * an error and counted (threadline.redis.unsuitable), turning back once as info. A check that
 * cannot reach Redis changes nothing: the outage has its own log line and its own 503.
 */
export class RedisSuitabilityWatch implements BackendSuitability {
  private current: ThreadlineError | undefined;
  /** Warnings logged and still found: a lasting one is logged once. */
  private warned: ReadonlySet<string>;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private metrics: GatewayMetrics | undefined;

  constructor(private readonly options: RedisSuitabilityWatchOptions) {
    this.warned = new Set(options.warnings);
  }

  problem(): ThreadlineError | undefined {
    return this.current;
  }

  /** Checks every `everyMs` from now on, counting on `metrics`; a second call changes nothing. */
  start(metrics: GatewayMetrics): void {
    this.metrics = metrics;
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.check(), this.options.everyMs);
    // A check pending must not keep a stopping process alive.
    this.timer.unref();
  }

  /** Checks now, or joins the check under way; resolves once its verdict is in effect. */
  check(): Promise<void> {
    this.checking ??= this.judge().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  /** No further checks; waits for the one under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.checking;
  }

  private async judge(): Promise<void> {
    const { logger } = this.options;
    let found;
    try {
      found = await checkRedis(this.options.redis, this.options.requirements);
    } catch {
      return;
    }
    for (const warning of found.warnings) if (!this.warned.has(warning)) logger.warn(warning);
    this.warned = new Set(found.warnings);
    const was = this.current;
    this.current = found.problems.length === 0 ? undefined : unsuitable(found.problems);
    if (was === undefined && this.current !== undefined) {
      logger.error({ code: this.current.code }, `${this.current.message} Until it is fixed this instance is not ready and refuses messages (503 TL_REDIS_UNSUITABLE).`);
      this.metrics?.unsuitableRedis();
    } else if (was !== undefined && this.current === undefined) {
      logger.info('Redis can hold threadline\'s work again: this instance is ready and takes messages');
    }
  }
}
