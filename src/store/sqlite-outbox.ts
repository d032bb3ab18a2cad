import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';
import { destinationMatches, originMatches, type OverdueParameters } from './sqlite-overdue-filters.js';
import { UNREPORTED_PROCESS } from './sqlite-processes.js';
import type { Prune } from './sqlite-prune.js';
import { NEXT_AT } from './sqlite-schema.js';

export interface DeliveryRow {
  id: string;
  kind: string;
  destination: string;
  text: string;
  in_reply_to: string | null;
  origin: string;
  status: string;
  attempts: number;
  attempts_since: number;
  due_at: number;
  lease_until: number | null;
  last_error: string | null;
  created_at: number;
  finished_at: number | null;
  /** An Attachment as JSON. */
  attachment: string | null;
  /** The live message this delivery replaces. */
  replaces: string | null;
  /** A CommandButton as JSON. */
  button: string | null;
}

/** A deliveries row without its text and attachment: what the forensics commands read. */
export interface DeliveryStateRow {
  id: string;
  kind: string;
  status: string;
  destination: string;
  origin: string;
  attempts: number;
  attempts_since: number;
  due_at: number;
  lease_until: number | null;
  last_error: string | null;
  finished_at: number | null;
}

export type AddResult = 'claimed' | 'queued' | 'exists';

/** A new delivery as its row's columns hold it: destination and origin encoded, no value undefined. */
export interface EncodedDelivery {
  readonly id: string;
  readonly kind: string;
  readonly destination: string;
  readonly text: string;
  readonly inReplyTo: string | null;
  readonly origin: string;
  readonly createdAt: number;
  readonly attachment: string | null;
  /** The platform's id of the live message this delivery replaces. */
  readonly replaces: string | null;
  /** A CommandButton as JSON. */
  readonly button: string | null;
}

const DELIVERY_COLUMNS = `id, kind, destination, text, in_reply_to, origin, status, attempts, attempts_since, due_at, lease_until, last_error, created_at, finished_at, attachment, replaces, button`;
const DELIVERY_STATE_COLUMNS = `id, kind, status, destination, origin, attempts, attempts_since, due_at, lease_until, last_error, finished_at`;

/** The id of the process whose completion notice is the delivery `id` (`proc:<id>:done`), else NULL. */
function processOfNotice(id: string): string {
  return `(CASE WHEN substr(${id}, 1, 5) = 'proc:' AND substr(${id}, -5) = ':done' THEN substr(${id}, 6, length(${id}) - 10) END)`;
}

/** The statements of the outbox: deliveries, each destination's head, their leases and counts. */
export function outboxOperations(db: Database.Database, prune: Prune) {
  const statement = preparer(db);
  const openOf = statement<{ open: number }>('SELECT open FROM open_counts WHERE destination = ?');
  const openTotal = statement<{ open: number }>(`SELECT open FROM open_counts WHERE destination = ''`);
  const fullDestinations = statement<{ n: number }>(`SELECT COUNT(*) AS n FROM open_counts WHERE destination <> '' AND waiting + open >= ?`);
  // The first entry of deliveries_pending_since, and the oldest of the heads being sent (only
  // heads are), read from deliveries_heads alone.
  const oldestOpen = statement<{ since: number | null }>(
    `SELECT MIN(since) AS since FROM (
       SELECT MIN(attempts_since) AS since FROM deliveries WHERE status = 'pending'
       UNION ALL SELECT MIN(attempts_since) FROM deliveries WHERE head = 1 AND status = 'sending')`,
  );
  const addDelivery = statement(
    `INSERT OR IGNORE INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, head, attempts, attempts_since, due_at, lease_until, created_at, attachment, replaces, button)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // Never open, so no head and no lease: the dead letter of a delivery that must not be sent.
  const addRefused = statement(
    `INSERT OR IGNORE INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, head, attempts, attempts_since, due_at, last_error, created_at, finished_at, attachment)
     VALUES (?, ?, ?, ?, ?, ?, 'failed', 0, 0, ?, ?, ?, ?, ?, ?)`,
  );
  const claim = statement<DeliveryRow>(
    `UPDATE deliveries SET status = 'sending', lease_until = ?
     WHERE rowid IN (SELECT rowid FROM deliveries WHERE head = 1 AND ${NEXT_AT} <= ? ORDER BY ${NEXT_AT} LIMIT ?)
     RETURNING ${DELIVERY_COLUMNS}`,
  );
  const nextAt = statement<{ at: number | null }>(`SELECT MIN(${NEXT_AT}) AS at FROM deliveries WHERE head = 1`);
  // A sender whose lease ended and whose delivery was claimed again (lease_until changed) finishes nothing.
  const finish = statement<{ destination: string }>(
    `UPDATE deliveries SET status = ?, head = 0, attempts = attempts + 1, last_error = ?, lease_until = NULL, finished_at = ?
     WHERE id = ? AND status = 'sending' AND lease_until = ? RETURNING destination`,
  );
  // The oldest pending delivery of a destination becomes its head once the one before it is finished.
  const promote = statement(
    `UPDATE deliveries SET head = 1 WHERE rowid = (SELECT MIN(rowid) FROM deliveries WHERE destination = ? AND status = 'pending')`,
  );
  const retryAt = statement(
    `UPDATE deliveries SET status = 'pending', attempts = attempts + 1, due_at = ?, last_error = ?, lease_until = NULL
     WHERE id = ? AND status = 'sending' AND lease_until = ?`,
  );
  // Only heads are ever being sent: through their index, not a walk of every row.
  const releaseLeases = statement(
    `UPDATE deliveries SET status = 'pending', due_at = ?, lease_until = NULL WHERE head = 1 AND ${NEXT_AT} IS NOT NULL AND status = 'sending'`,
  );
  const failedIds = statement<{ id: string; destination: string }>(`SELECT id, destination FROM deliveries WHERE status = 'failed' ORDER BY rowid`);
  const failedById = statement<{ id: string; destination: string }>(`SELECT id, destination FROM deliveries WHERE id = ? AND status = 'failed'`);
  const reopen = statement(
    `UPDATE deliveries SET status = 'pending', head = ?, attempts = 0, attempts_since = ?, due_at = ?, finished_at = NULL WHERE id = ?`,
  );
  // `chat` is a chat id as formatDestination encodes it, '' for all: after the platform, a
  // destination is that chat alone or followed by ':' and a thread.
  const ofChat = `(@chat = '' OR substr(destination, instr(destination, ':') + 1) = @chat
     OR substr(destination, instr(destination, ':') + 1, length(@chat) + 1) = @chat || ':')`;
  const listFailed = statement<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE status = 'failed' AND ${ofChat} ORDER BY finished_at DESC LIMIT @limit`,
  );
  const listAll = statement<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE ${ofChat} ORDER BY rowid DESC LIMIT @limit`);

  // Each status read through its own index (pending by deliveries_pending_since, failed by
  // deliveries_failed_since, both on when their series began; only heads are ever being sent,
  // read from deliveries_heads), newest first, so each stops at its LIMIT; then merged. A store
  // made before deliveries_failed_since existed, read without creating it, sorts its dead letters. A process's completion notice is
  // reported with its process while the process is in its table (unreportedProcesses).
  const overdueOf = (where: string) =>
    `SELECT * FROM (SELECT ${DELIVERY_STATE_COLUMNS} FROM deliveries WHERE ${where} AND attempts_since < @before
       AND (@filtered = 0 OR ${destinationMatches('destination')} OR ${originMatches('origin')})
       AND NOT EXISTS (SELECT 1 FROM processes WHERE processes.id = ${processOfNotice('deliveries.id')} AND ${UNREPORTED_PROCESS})
       ORDER BY attempts_since DESC, id DESC LIMIT @limit)`;
  const overdueDeliveries = statement<DeliveryStateRow>(
    `SELECT ${DELIVERY_STATE_COLUMNS} FROM (
       ${overdueOf(`status = 'pending'`)}
       UNION ALL ${overdueOf(`head = 1 AND status = 'sending'`)}
       UNION ALL ${overdueOf(`status = 'failed'`)})
     ORDER BY attempts_since DESC, id DESC LIMIT @limit`,
  );

  // The ids arrive as one JSON array: one statement whatever their number (the caller bounds it).
  const statesOf = statement<{ id: string; status: string }>(`SELECT id, status FROM deliveries WHERE id IN (SELECT value FROM json_each(?))`);

  const open = (destination: string): number => openOf.get(destination)?.open ?? 0;
  /** Finishes a delivery being sent under `leaseUntil`; true when the next of its destination became its head. */
  const finishDelivery = (id: string, status: 'done' | 'failed', error: string | null, now: number, leaseUntil: number): boolean => {
    const finished = finish.get(status, error?.slice(0, 1000) ?? null, now, id, leaseUntil);
    if (finished === undefined) return false;
    prune(now);
    return promote.run(finished.destination).changes === 1;
  };

  return {
    /**
     * Records a delivery. With nothing of its destination open it is that destination's head
     * and is claimed at once (`claimed`: the caller sends it now); otherwise it waits its turn.
     */
    addDelivery(row: EncodedDelivery, leaseUntil: number): AddResult {
      const { id, kind, destination, text, inReplyTo, origin, createdAt: now, attachment, replaces, button } = row;
      const head = open(destination) === 0;
      const added = addDelivery.run(id, kind, destination, text, inReplyTo, origin, head ? 'sending' : 'pending', head ? 1 : 0, now, now, head ? leaseUntil : null, now, attachment, replaces, button);
      return added.changes === 0 ? 'exists' : head ? 'claimed' : 'queued';
    },
    /** Records a delivery that must not be sent as a dead letter; false when its id was recorded before. */
    addRefusedDelivery(row: EncodedDelivery, error: string): boolean {
      const { id, kind, destination, text, inReplyTo, origin, createdAt: now, attachment } = row;
      return addRefused.run(id, kind, destination, text, inReplyTo, origin, now, now, error.slice(0, 1000), now, now, attachment).changes === 1;
    },
    /**
     * Marks up to `limit` heads that need attention by `now` as being sent until `leaseUntil`:
     * due pending ones, and sending ones whose lease ended (their sender died or lost its
     * record). Returns them, and when the next head will need attention.
     */
    claim(now: number, limit: number, leaseUntil: number): { rows: DeliveryRow[]; nextAt: number | undefined } {
      // Prunes here too: a gateway whose messages make few deliveries still forgets old keys.
      prune(now);
      const rows = claim.all(leaseUntil, now, limit);
      return { rows, nextAt: nextAt.get()?.at ?? undefined };
    },
    markDone: (id: string, now: number, leaseUntil: number): boolean => finishDelivery(id, 'done', null, now, leaseUntil),
    markFailed: (id: string, error: string, now: number, leaseUntil: number): boolean => finishDelivery(id, 'failed', error, now, leaseUntil),
    retryAt(id: string, dueAt: number, error: string, leaseUntil: number): void {
      retryAt.run(dueAt, error.slice(0, 1000), id, leaseUntil);
    },
    /** At start-up, under the data dir's lock: whatever was being sent is due now. */
    releaseLeases(now: number): void {
      releaseLeases.run(now);
    },
    /**
     * Makes failed deliveries pending again with a fresh series of attempts. Each keeps its
     * place: it is sent after the destination's current head, before deliveries made later.
     */
    retryFailed(id: string | null, now: number): number {
      const rows = id === null ? failedIds.all() : failedById.all(id);
      for (const row of rows) reopen.run(open(row.destination) === 0 ? 1 : 0, now, now, row.id);
      return rows.length;
    },
    /** The newest deliveries (failed ones only, if asked) to the chat spelled `chat` ('' for all). */
    listDeliveries: (failedOnly: boolean, chat: string, limit: number): DeliveryRow[] =>
      (failedOnly ? listFailed : listAll).all({ chat, limit }),
    /** Deliveries not done whose series of attempts began before `before`, newest first (see OutboxStore.overdue). */
    overdueDeliveries: (parameters: OverdueParameters): DeliveryStateRow[] => overdueDeliveries.all(parameters),
    /** The status of each delivery of `ids` (a JSON array of strings) the outbox holds. */
    deliveryStates: (ids: string): { id: string; status: string }[] => statesOf.all(ids),
    pressure: (maxOpenPerDestination: number): { open: number; fullDestinations: number; oldestOpenSince: number | undefined } => ({
      open: openTotal.get()!.open,
      fullDestinations: fullDestinations.get(maxOpenPerDestination)!.n,
      oldestOpenSince: oldestOpen.get()?.since ?? undefined,
    }),
  };
}
