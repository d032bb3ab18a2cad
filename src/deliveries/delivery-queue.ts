import type { Span } from '@opentelemetry/api';
import type { NewDelivery, OutboxPressure, OutboxRecords } from '../store/store.js';
import type { DeliveryRecord } from '../session/delivery.js';
import type { DeliveryMinutes } from './delivery-minutes.js';
import type { OutboxStats } from './outbox-stats.js';

/**
 * What the pipeline asks of whatever sends its deliveries: the embedded outbox (the store's
 * rows, a claim loop) or the distributed one (mailboxes per destination on Redis). The router records
 * through send(); the gateway starts, stops and reads it.
 */
export interface DeliveryQueue {
  /**
   * Records a delivery inside the caller's gateway.deliver span and has it sent in its
   * destination's order. Resolves once it is recorded (the embedded outbox may also have sent it).
   */
  send(delivery: NewDelivery, span: Span): Promise<void>;
  /**
   * Keeps a delivery that must not be sent (the misroute guard refused it) as a dead letter
   * whose last error is `reason`: listed with the failed ones, sent only if retried by hand.
   */
  refuse(delivery: NewDelivery, reason: string, span: Span): Promise<void>;
  /** Starts sending what is recorded. */
  start(): Promise<void>;
  /** Stops sending; sends under way get until `deadline` (ms since the epoch). What is not sent stays recorded. */
  stop(deadline: number): Promise<void>;
  /** Resolves once the records of every send so far have committed. */
  recorded(): Promise<void>;
  /** This instance's sends since start. */
  stats(): OutboxStats;
  /** This instance's sends a minute over the last hour, and their latency (the operator's page charts them). */
  readonly minutes: DeliveryMinutes;
  pressure(maxOpenPerDestination: number): Promise<OutboxPressure>;
  list(filter: Parameters<OutboxRecords['list']>[0]): Promise<DeliveryRecord[]>;
}
