import type { Logger } from 'pino';
import type { AnyStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { Deliverer } from './deliver-later.js';

/** What the gateway lends its tools: where deliveries go, the store, time and a logger. */
export interface ToolServices {
  /** The gateway's delivery router: the only way out for a tool's messages. */
  readonly deliverer: Deliverer;
  readonly store: AnyStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** THREADLINE_DATA_DIR: a tool's files (background commands' output) live under it. */
  readonly dataDir: string;
  /** The platforms enabled in this gateway. */
  readonly platforms: ReadonlySet<string>;
  /**
   * Settings every command the terminal runs gets from the running gateway, over its own
   * environment: where `threadline send` finds the outbox and which platforms it may address.
   */
  readonly commandSettings?: Readonly<Record<string, string>> | undefined;
  /** This gateway's instance id when several share one store (THREADLINE_REDIS_URL); undefined when embedded. */
  readonly instance?: string | undefined;
  /** Which instances still answer (their heartbeat in Redis); set with `instance`, so a lost one's commands are reported. */
  readonly instances?: InstanceLiveness | undefined;
}

/**
 * The heartbeats of the instances sharing one store: how the terminal finds the background
 * commands of an instance that died (kill -9, host lost) and tells their chats.
 */
export interface InstanceLiveness {
  /** How often to look for lost instances: a fraction of the lease, so one is found soon after it expires. */
  readonly checkEveryMs: number;
  /** False once `instanceId`'s heartbeat has expired. Throws when the shared store cannot tell. */
  isAlive(instanceId: string): Promise<boolean>;
  /**
   * True when this instance has beaten without a gap for a whole lease: only then does a missing
   * heartbeat mean a lost instance rather than an outage every instance shared.
   */
  canJudge(): boolean;
  /** Claims the report of process `processId`, lost with its instance, for a lease: true for one caller at a time. */
  claimLost(processId: string): Promise<boolean>;
}

/** Work a tool keeps running between messages (watchers, the scheduler), started and stopped with the gateway. */
export interface BackgroundWork {
  /**
   * Takes over what an earlier process left (running commands) before any message runs, a
   * replayed one included, sending nothing; start() adopts too when this was not called.
   */
  adopt?(): Promise<void>;
  /** Adopts what an earlier process left (running commands, missed runs) and starts its timers. */
  start(): Promise<void>;
  /** Stops its timers and waits for the deliveries under way; what it watches keeps running. */
  stop(): Promise<void>;
}
