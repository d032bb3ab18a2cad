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
  /** This gateway's instance id when several share one store (THREADLINE_REDIS_URL); undefined when embedded. */
  readonly instance?: string | undefined;
}

/** Work a tool keeps running between messages (watchers, the scheduler), started and stopped with the gateway. */
export interface BackgroundWork {
  /** Adopts what an earlier process left (running commands, missed runs) and starts its timers. */
  start(): Promise<void>;
  /** Stops its timers and waits for the deliveries under way; what it watches keeps running. */
  stop(): Promise<void>;
}
