import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { messageOf } from '../errors.js';
import { runDetached } from '../session/index.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { guarded } from '../store/redis/redis-scripts.js';
import type { InstanceLiveness } from '../tools/tool-services.js';

/** Renewals per lease: two can fail in a row before the key expires. */
const BEATS_PER_LEASE = 3;

export interface InstanceHeartbeatOptions {
  /** The commands' connection (fails fast while Redis is away). */
  readonly redis: Redis;
  readonly keys: RedisKeys;
  /** THREADLINE_INSTANCE_ID. */
  readonly instanceId: string;
  /** THREADLINE_INSTANCE_LEASE_MS: the heartbeat expires this long after its last renewal. */
  readonly leaseMs: number;
  readonly logger: Logger;
  /** Default Date.now; a test moves it on. */
  readonly now?: () => number;
}

/**
 * An instance's heartbeat in Redis: a key set with a lease (PX) and renewed every third of it
 * from the root context. Another instance that finds it expired knows this one died (kill -9,
 * host lost) and reports its background commands lost. A graceful stop only stops renewing:
 * the key runs out its lease, so an instance restarted within it adopts its commands itself
 * and no chat is told they were lost.
 */
export class InstanceHeartbeat implements InstanceLiveness {
  readonly checkEveryMs: number;
  /** Told apart from an earlier process of the same id, in the key's value, for a reader of the key. */
  private readonly token = `${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  /** Since when every renewal succeeded; undefined after a failure, until the next success. */
  private steadySince: number | undefined;
  /** So an outage is logged once, not every third of a lease. */
  private failing = false;

  constructor(private readonly options: InstanceHeartbeatOptions) {
    this.checkEveryMs = Math.max(1, Math.round(options.leaseMs / BEATS_PER_LEASE));
    this.now = options.now ?? Date.now;
  }

  /** The heartbeat key of `instanceId`. */
  keyOf(instanceId: string): string {
    return this.options.keys.key('instance', instanceId);
  }

  /** Beats once (a failure is logged, not thrown: intake reports Redis outages), then every third of the lease. */
  async start(): Promise<void> {
    if (this.timer !== undefined) return;
    await this.beat();
    // From the root context: a renewal never carries the context of whoever started the gateway.
    this.timer = runDetached(() => setInterval(() => void this.beat(), this.checkEveryMs));
    this.timer.unref();
  }

  /** Stops renewing and waits for a renewal under way; the key expires with its lease. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.steadySince = undefined;
    await this.beating;
  }

  async isAlive(instanceId: string): Promise<boolean> {
    return (await guarded(this.options.redis.exists(this.keyOf(instanceId)))) === 1;
  }

  canJudge(): boolean {
    return this.timer !== undefined && this.steadySince !== undefined && this.now() - this.steadySince >= this.options.leaseMs;
  }

  async claimLost(processId: string): Promise<boolean> {
    const claimed = await guarded(this.options.redis.set(this.options.keys.key('process-lost', processId), this.options.instanceId, 'PX', this.options.leaseMs, 'NX'));
    return claimed === 'OK';
  }

  private beat(): Promise<void> {
    // One renewal at a time: a slow Redis never piles them up.
    if (this.beating !== undefined) return this.beating;
    this.beating = this.renew().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  private async renew(): Promise<void> {
    const startedAt = this.now();
    try {
      await guarded(this.options.redis.set(this.keyOf(this.options.instanceId), this.token, 'PX', this.options.leaseMs));
      this.steadySince ??= startedAt;
      if (this.failing) this.options.logger.info('instance heartbeat renewed again');
      this.failing = false;
    } catch (error) {
      this.steadySince = undefined;
      if (!this.failing) {
        this.options.logger.warn(
          { err: messageOf(error), instance: this.options.instanceId },
          'could not renew this instance\'s heartbeat in Redis; other instances will report its background commands lost if this lasts a lease',
        );
      }
      this.failing = true;
    }
  }
}
