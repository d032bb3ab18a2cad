import { parseDestination, type Destination } from '../session/delivery.js';
import { parseTarget, type Target } from '../session/target.js';
import type { RoutingSnapshot } from '../session/index.js';
import type { DeliveryState, ScheduleState, Store, UnreportedProcess } from '../store/store.js';
import { lostWhat, type LostWork, type RoutingView } from './findings.js';

export interface LostInStoreOptions {
  /** ms since the epoch. */
  readonly now: number;
  /** Work not delivered this long after it was due counts as lost. */
  readonly lostAfterMs: number;
  readonly limit: number;
  /** Plain ids, as the store holds them: only work going to, or coming from, this chat (and thread). */
  readonly chatId?: string;
  readonly threadId?: string;
}

/** What findLostInStore reads of a store: SqliteStore.openReadOnly's is enough. */
export type LostWorkReads = Pick<Store, 'outbox' | 'processes' | 'schedules' | 'homes'>;

/**
 * Work the gateway's store shows due more than `lostAfterMs` before `now` and not delivered,
 * newest first, at most `limit`. Reads only; the store is never changed.
 *
 * - An outbox delivery not done: `failed` (given up, a dead letter), `pending` or `sending`, due
 *   when its current series of attempts began (its creation, or a retry from the CLI). `what`
 *   follows its kind: `cron run` (cron), `watcher notification` (notification), else `delivery`.
 * - A reminder or cron job whose run is overdue: `cron run`, state `overdue`, id the delivery id
 *   the scheduler gives that run (`cron:<schedule>:<due>`), workId the schedule's.
 * - A background command that ended, asked to be told, and whose completion notice is not done:
 *   `watcher notification`, id its notice's delivery id (`proc:<process>:done`), workId the
 *   process's, due at its end, state the notice's status or `not recorded` when the outbox has
 *   none. Its notice is then not reported a second time.
 * Ids are the traces' delivery ids, so a finding both report is recognised as one. A damaged
 * row is reported with what can be read of it.
 */
export async function findLostInStore(store: LostWorkReads, options: LostInStoreOptions): Promise<LostWork[]> {
  const limit = Math.max(0, Math.floor(options.limit));
  if (limit === 0) return [];
  const query = {
    before: options.now - options.lostAfterMs,
    limit,
    chatId: options.chatId,
    threadId: options.threadId,
  };
  const [deliveries, processes, schedules] = await Promise.all([
    store.outbox.overdue(query),
    store.processes.unreported(query),
    store.schedules.overdue(query),
  ]);
  const homes = homeLookup(store);
  const found = [
    ...deliveries.map(lostDelivery),
    ...processes.map(lostNotice),
    ...(await Promise.all(schedules.map(async (schedule) => overdueRun(schedule, await runDestination(schedule, homes))))),
  ];
  return found.sort(newestFirst).slice(0, limit);
}

function lostDelivery(delivery: DeliveryState): LostWork {
  return {
    type: 'lost',
    what: lostWhat(delivery.kind),
    id: delivery.id,
    kind: delivery.kind,
    state: delivery.status,
    dueAt: delivery.attemptsSince,
    ...withDestination(destinationOf(delivery.destination)),
    ...originOf(delivery.origin),
    ...(delivery.lastError === undefined ? {} : { lastError: delivery.lastError }),
    attempts: delivery.attempts,
    source: 'store',
  };
}

function lostNotice({ record, notice }: UnreportedProcess): LostWork {
  return {
    type: 'lost',
    what: 'watcher notification',
    id: notice?.id ?? noticeIdOf(record.id),
    workId: record.id,
    kind: 'notification',
    state: notice?.status ?? 'not recorded',
    dueAt: record.exit.endedAt,
    // The notice goes where the command was started: its destination when recorded, else the origin's chat.
    ...withDestination(notice === undefined ? record.destination : (destinationOf(notice.destination) ?? record.destination)),
    ...originOf(record.origin),
    ...(notice?.lastError === undefined ? {} : { lastError: notice.lastError }),
    ...(notice === undefined ? {} : { attempts: notice.attempts }),
    source: 'store',
  };
}

function overdueRun(schedule: ScheduleState, destination: Destination | undefined): LostWork {
  return {
    type: 'lost',
    what: 'cron run',
    id: runIdOf(schedule),
    workId: schedule.id,
    kind: 'cron',
    state: 'overdue',
    dueAt: schedule.nextAt,
    ...withDestination(destination),
    ...originOf(schedule.origin),
    source: 'store',
  };
}

/** The delivery id of a process's completion notice, as the watcher records it. */
function noticeIdOf(processId: string): string {
  return `proc:${processId}:done`;
}

/** The delivery id of a schedule's overdue run, as the scheduler gives it (cron-scheduler.ts). */
function runIdOf(schedule: ScheduleState): string {
  return `cron:${schedule.id}:${schedule.nextAt}`;
}


/** Home channels by platform, each read once per search. */
function homeLookup(store: LostWorkReads): (platform: string) => Promise<Destination | undefined> {
  const known = new Map<string, Promise<Destination | undefined>>();
  return (platform) => {
    let home = known.get(platform);
    if (home === undefined) known.set(platform, (home = store.homes.get(platform)));
    return home;
  };
}

/** Where a run would have gone: the origin's chat, a home channel (undefined when unset), or an explicit destination. */
async function runDestination(
  schedule: ScheduleState,
  homes: (platform: string) => Promise<Destination | undefined>,
): Promise<Destination | undefined> {
  let target: Target;
  try {
    target = parseTarget(schedule.target);
  } catch {
    // A target the scheduler cannot read either: the finding still names the job and its origin.
    return undefined;
  }
  if (target.to === 'origin') return schedule.destination;
  if (target.to !== 'home') return target.destination;
  // A damaged origin names no platform: the home channel is then unknown, not an error.
  const platform = target.platform ?? platformOf(schedule.origin);
  return platform === undefined ? undefined : homes(platform);
}

function platformOf(snapshot: RoutingSnapshot | undefined): string | undefined {
  const platform: unknown = sessionOf(snapshot)?.platform;
  return typeof platform === 'string' ? platform : undefined;
}

/** The snapshot's session, when the snapshot (perhaps read from a damaged row) has one. */
function sessionOf(snapshot: RoutingSnapshot | undefined): RoutingSnapshot['session'] | undefined {
  const session: unknown = snapshot?.session;
  return typeof session === 'object' && session !== null ? (session as RoutingSnapshot['session']) : undefined;
}

/** A stored destination, or undefined when it does not parse (the delivery was given up as unreadable). */
function destinationOf(text: string): Destination | undefined {
  try {
    return parseDestination(text);
  } catch {
    return undefined;
  }
}

function withDestination(destination: Destination | undefined): { destination?: RoutingView } {
  return destination === undefined ? {} : { destination: viewOf(destination) };
}

function originOf(snapshot: RoutingSnapshot | undefined): { origin?: RoutingView; originTraceId?: string } {
  const session = sessionOf(snapshot);
  if (session === undefined) return {};
  const { platform, chatId, threadId } = session;
  return {
    origin: viewOf({ platform, chatId, ...(threadId === undefined ? {} : { threadId }) }),
    ...(typeof snapshot?.origin?.traceId === 'string' ? { originTraceId: snapshot.origin.traceId } : {}),
  };
}

function viewOf(destination: Destination): RoutingView {
  return {
    platform: destination.platform,
    chatId: destination.chatId,
    ...(destination.threadId === undefined ? {} : { threadId: destination.threadId }),
  };
}

/** Latest due first; ties by id, so the order is the same run after run. */
function newestFirst(a: LostWork, b: LostWork): number {
  return b.dueAt - a.dueAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}
