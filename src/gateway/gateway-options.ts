import type { Logger } from 'pino';
import type { Admins } from './commands/admins.js';
import type { Agent } from '../agent/agent.js';
import type { ThreadlineError } from '../errors.js';
import type { DeliveryQueue } from '../deliveries/delivery-queue.js';
import type { OutboxOptions } from '../deliveries/outbox.js';
import type { Platform } from '../platforms/platform.js';
import type { AnyStore } from '../store/store.js';
import type { StoreWrites } from '../store/store-writes.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import type { TurnQueue } from './turn-queue.js';
import type { PresenceOptions } from './turn-presence.js';

/** What a distributed delivery queue is built from: the gateway's platforms, settings, log and metrics. */
export interface DeliveryQueueParts {
  readonly platforms: ReadonlyMap<string, Platform>;
  readonly options: OutboxOptions;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
}

/** Where turns wait and deliveries are sent when that is not this process alone (THREADLINE_REDIS_URL). */
export interface GatewayQueues {
  readonly turns: TurnQueue;
  readonly deliveries: (parts: DeliveryQueueParts) => DeliveryQueue;
}

/** Whether the shared backend can still hold accepted work, as last checked while the gateway runs. */
export interface BackendSuitability {
  /** Why it cannot (TL_REDIS_UNSUITABLE): intake refuses and /v1/ready answers 503 with it. Undefined while it can. */
  problem(): ThreadlineError | undefined;
}

export interface GatewayOptions {
  /** Without `queues`, the embedded store, whose outbox rows the in-process outbox sends. */
  readonly store: AnyStore;
  /** Default: in process, on the embedded store. */
  readonly queues?: GatewayQueues;
  readonly platforms: readonly Platform[];
  readonly agent: Agent;
  readonly logger: Logger;
  /** THREADLINE_CONCURRENCY: turns running at once across sessions. */
  readonly concurrency: number;
  /** THREADLINE_QUEUE_CAPACITY: messages waiting or running before intake answers 429. */
  readonly queueCapacity: number;
  /** THREADLINE_GROUP_SESSIONS=per-user: one session per user in group chats. */
  readonly perUserGroupSessions: boolean;
  /** THREADLINE_STRICT_ROUTING: refuse a delivery whose destination differs from its origin. */
  readonly strictRouting: boolean;
  /** THREADLINE_ADMINS: who may run admin commands; default nobody. */
  readonly admins?: Admins;
  /** THREADLINE_TYPING_INTERVAL_MS, THREADLINE_DRAFT_INTERVAL_MS; default DEFAULT_PRESENCE. */
  readonly presence?: PresenceOptions;
  /** On Redis: its suitability, checked again while the gateway runs; intake refuses while it is unsuitable. */
  readonly suitability?: BackendSuitability | undefined;
  /** Default: threadline's instruments on the meter provider registered when the gateway is built. */
  readonly metrics?: GatewayMetrics;
  /** Watches the store's writes for readiness; pass the one the tools' store is watched by too. Default: its own. */
  readonly storeWrites?: StoreWrites;
  readonly outbox: OutboxOptions & {
    /** THREADLINE_OUTBOX_MAX_PER_CHAT: open deliveries of one destination before its intake answers 429. */
    readonly maxOpenPerDestination: number;
    /** THREADLINE_OUTBOX_MAX_PENDING: open deliveries in all before intake answers 503. */
    readonly maxOpenTotal: number;
  };
}
