import type { DeliveryMinute } from '../deliveries/delivery-minutes.js';
import type { LostWork } from '../forensics/findings.js';
import { findLostInStore, type LostWorkReads } from '../forensics/lost-in-store.js';
import type { Gateway, GatewayHealth } from '../gateway/gateway.js';
import type { LiveTurn } from '../gateway/live-turns.js';
import { routingMismatch } from '../session/routing-mismatch.js';
import type { DeliveryRecord } from '../session/delivery.js';
import type { Session } from '../session/index.js';
import type { AnyStore, ProcessRecord, ScheduleRecord } from '../store/store.js';

/** Rows each table shows at most: the page is read, not scrolled. */
export const SHOWN_ROWS = 50;
/** Dead letters read to find the misroutes among them. */
const SCANNED_DEAD_LETTERS = 500;
/** Work not delivered this long after it was due counts as lost, as `threadline misroutes` counts it. */
export const LOST_AFTER_MS = 10 * 60_000;

/** What the operator's page shows, read at one moment. */
export interface OperatorView {
  readonly now: number;
  readonly health: GatewayHealth;
  /** Running on this instance now. */
  readonly liveTurns: readonly LiveTurn[];
  /** The newest failed deliveries, at most SHOWN_ROWS. */
  readonly deadLetters: readonly DeliveryRecord[];
  /** Whether more are failed than shown. */
  readonly moreDeadLetters: boolean;
  /** Dead letters the misroute guard refused: their destination is not their origin's chat. */
  readonly misroutes: readonly DeliveryRecord[];
  /** Due more than LOST_AFTER_MS ago and not delivered, as `threadline misroutes` finds it in the store. */
  readonly lost: readonly LostWork[];
  /** Background commands still running: the oldest SHOWN_ROWS, and how many run in all. */
  readonly commands: readonly ProcessRecord[];
  readonly commandCount: number;
  /** Reminders and cron jobs: the SHOWN_ROWS due first, and how many there are. */
  readonly schedules: readonly ScheduleRecord[];
  readonly scheduleCount: number;
  /** This instance's sends a minute, over the last hour. */
  readonly minutes: readonly DeliveryMinute[];
}

/** Reads the page's view of the gateway and its store; reads only. */
export async function readOperatorView(gateway: Gateway, store: AnyStore, now: number): Promise<OperatorView> {
  const [health, failed, lost, processes, schedules] = await Promise.all([
    gateway.health(),
    store.outbox.list({ failedOnly: true, limit: SCANNED_DEAD_LETTERS }),
    // It reads only OutboxRecords.overdue of the outbox, which the distributed store's answers too.
    findLostInStore(store as unknown as LostWorkReads, { now, lostAfterMs: LOST_AFTER_MS, limit: SHOWN_ROWS }),
    store.processes.all(),
    store.schedules.all(),
  ]);
  const running = processes.filter((record) => record.exit === undefined);
  return {
    now,
    health,
    liveTurns: gateway.liveTurns.list(),
    deadLetters: failed.slice(0, SHOWN_ROWS),
    moreDeadLetters: failed.length > SHOWN_ROWS,
    misroutes: failed.filter(refusedAsMisroute).slice(0, SHOWN_ROWS),
    lost,
    commands: running.slice(0, SHOWN_ROWS),
    commandCount: running.length,
    schedules: schedules.slice(0, SHOWN_ROWS),
    scheduleCount: schedules.length,
    minutes: gateway.outbox.minutes.last(now),
  };
}

/**
 * A dead letter the misroute guard kept: an origin reply bound elsewhere than its origin's chat,
 * refused under THREADLINE_STRICT_ROUTING (router.ts names the setting in its error).
 */
export function refusedAsMisroute(record: DeliveryRecord): boolean {
  const session = record.origin?.session as Session | undefined;
  if (session === undefined || typeof session.platform !== 'string') return false;
  return (record.lastError ?? '').includes('(THREADLINE_STRICT_ROUTING)') && routingMismatch(session, record.destination) !== undefined;
}
