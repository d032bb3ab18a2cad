import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';
import type { Retention } from './retention.js';
import { NEXT_AT, createSchema, requireSchemaVersion } from './sqlite-schema.js';
import type { BackgroundCaps, CappedAdd } from './store.js';

/**
 * Finished deliveries and expired intake keys deleted per prune: a day's worth in one DELETE
 * would hold the event loop for as long as it takes. A prune runs once a second, or every
 * 10 ms while the last batch was full.
 */
export const PRUNE_BATCH = 1_000;
const PRUNE_INTERVAL_MS = 1_000;
const PRUNE_BACKLOG_INTERVAL_MS = 10;
/** How long a writer waits for another connection's write (the CLI's, say) before failing. */
const BUSY_TIMEOUT_MS = 5_000;

/** History entries older than this are pruned: a session not seen for a month starts afresh. */
export const HISTORY_RETENTION_MS = 30 * 24 * 3600_000;

export interface MessageRow {
  id: string;
  routing: string;
  text: string;
  received_at: number;
}

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

/** An ended process whose end was not reported, with its completion notice's state (all null when there is none). */
export interface UnreportedProcessRow extends ProcessRow {
  notice_status: string | null;
  notice_kind: string | null;
  notice_destination: string | null;
  notice_origin: string | null;
  notice_attempts: number | null;
  notice_attempts_since: number | null;
  notice_due_at: number | null;
  notice_lease_until: number | null;
  notice_last_error: string | null;
  notice_finished_at: number | null;
}

/**
 * The named parameters of the forensics reads: only what is due before `before`, at most
 * `limit`; with `filtered` 1, only what a chat (and thread) matches. `chat_id` and `thread_id`
 * are plain ids (null: any), matched in routing snapshots; `chat` and `thread` the same ids
 * percent-encoded, as formatDestination spells them, matched in destinations.
 */
export interface OverdueParameters {
  before: number;
  limit: number;
  filtered: 0 | 1;
  chat_id: string | null;
  thread_id: string | null;
  chat: string | null;
  thread: string | null;
}

/** A processes row; named parameters of its INSERT too. */
export interface ProcessRow {
  id: string;
  origin: string;
  destination: string;
  command: string;
  pid: number;
  started_at: number;
  notify_on_complete: number;
  check_interval_ms: number | null;
  progress_sent: number;
  ended_at: number | null;
  exit_code: number | null;
  exit_signal: string | null;
  exit_note: string | null;
}

/** A schedules row; named parameters of its INSERT too. */
export interface ScheduleRow {
  id: string;
  origin: string;
  destination: string;
  target: string;
  text: string;
  cron: string | null;
  timezone: string | null;
  next_at: number;
  created_at: number;
}

/** A history row as written (without its `seq`) and read back. */
export interface HistoryRow {
  role: string;
  text: string;
  source: string | null;
  extra: string | null;
  at: number;
}

/** What intake checks in the transaction that appends a message, as the store's connection takes it. */
export interface EncodedAcceptChecks {
  /** The message's own destination (formatDestination), whose open deliveries are capped. */
  readonly destination: string;
  readonly maxOpenPerDestination: number;
  readonly maxOpenTotal: number;
  /** A platform's id for the message: a second message with it gets the first's answer. */
  readonly idempotencyKey?: string;
  /** The answer to remember under the key, and until when. */
  readonly answer?: string;
  readonly keyExpiresAt?: number;
}

export type AcceptResult =
  | { readonly status: 'accepted' }
  | { readonly status: 'duplicate'; readonly answer: string }
  | { readonly status: 'full'; readonly scope: 'destination' | 'total'; readonly open: number };

export type AddResult = 'claimed' | 'queued' | 'exists';

/** Opens the database file in WAL mode with synchronous=NORMAL and creates the schema. */
export function openDatabase(path: string): Database.Database {
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    createSchema(db);
    return db;
  } catch (error) {
    throw new ThreadlineError(
      'TL_STORE_FAILED',
      `Cannot open the store at ${path}: ${messageOf(error)}. Check that THREADLINE_DATA_DIR is writable and has space.`,
      { cause: error },
    );
  }
}

/** A database opened read-only, and what to undo when it is closed. */
export interface ReadOnlyDatabase {
  readonly db: Database.Database;
  /** Closes the database and removes the private copy it may have been read from. */
  readonly close: () => void;
}

/**
 * Opens an existing store for reading only: no schema is created or moved, and SQLite refuses
 * every write. In WAL mode this reader never blocks the gateway's writer, nor it this reader.
 * A store in a directory this user cannot write, closed cleanly (no -shm file to read the WAL
 * through), cannot be opened in place: it is read from a private copy, which is consistent
 * because no gateway can be writing in a directory where it cannot make its WAL.
 * TL_STORE_FAILED says why it cannot be read.
 */
export function openReadOnlyDatabase(path: string): ReadOnlyDatabase {
  try {
    return readInPlace(path);
  } catch (error) {
    if (error instanceof ThreadlineError) throw error;
    if ((error as { code?: unknown } | null)?.code !== 'SQLITE_READONLY_DIRECTORY') throw cannotRead(path, error);
  }
  return readFromCopy(path);
}

function readInPlace(path: string, name = path): ReadOnlyDatabase {
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    requireSchemaVersion(db, name);
  } catch (error) {
    db.close();
    throw error;
  }
  return { db, close: () => db.close() };
}

/** Reads a copy of the file and of its WAL, made in a private directory removed on close. */
function readFromCopy(path: string): ReadOnlyDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-store-'));
  try {
    const copy = join(dir, basename(path));
    copyFileSync(path, copy);
    if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
    const { db } = readInPlace(copy, path);
    return {
      db,
      close: () => {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error instanceof ThreadlineError ? error : cannotRead(path, error);
  }
}

function cannotRead(path: string, error: unknown): ThreadlineError {
  return new ThreadlineError(
    'TL_STORE_FAILED',
    `Cannot read the store at ${path}: ${messageOf(error)}. Check that it is the gateway's threadline.db and that this user can read it.`,
    { cause: error },
  );
}

const DELIVERY_COLUMNS = `id, kind, destination, text, in_reply_to, origin, status, attempts, attempts_since, due_at, lease_until, last_error, created_at, finished_at, attachment`;
const PROCESS_COLUMNS = `id, origin, destination, command, pid, started_at, notify_on_complete, check_interval_ms, progress_sent, ended_at, exit_code, exit_signal, exit_note`;
const SCHEDULE_COLUMNS = `id, origin, destination, target, text, cron, timezone, next_at, created_at`;
const HISTORY_COLUMNS = `role, text, source, extra, at`;
const DELIVERY_STATE_COLUMNS = `id, kind, status, destination, origin, attempts, attempts_since, due_at, lease_until, last_error, finished_at`;

/**
 * True when the destination spelled in `column` (formatDestination's `platform:chat[:thread]`,
 * or NULL) is of the asked chat and thread (OverdueParameters). Encoded ids hold no ':', so
 * after the platform comes the chat, then ':' and the thread when there is one.
 */
function destinationMatches(column: string): string {
  const rest = `substr(${column}, instr(${column}, ':') + 1)`;
  return `(instr(${column}, ':') > 0
    AND (@chat IS NULL OR ${rest} = @chat OR substr(${rest}, 1, length(@chat) + 1) = @chat || ':')
    AND (@thread IS NULL OR (instr(${rest}, ':') > 0 AND substr(${rest}, instr(${rest}, ':') + 1) = @thread)))`;
}

/** True when the routing snapshot (JSON) in `column` is of the asked chat and thread (OverdueParameters). */
function originMatches(column: string): string {
  return `(json_valid(${column})
    AND (@chat_id IS NULL OR json_extract(${column}, '$.session.chatId') = @chat_id)
    AND (@thread_id IS NULL OR json_extract(${column}, '$.session.threadId') = @thread_id))`;
}

/** The id of the process whose completion notice is the delivery `id` (`proc:<id>:done`), else NULL. */
function processOfNotice(id: string): string {
  return `(CASE WHEN substr(${id}, 1, 5) = 'proc:' AND substr(${id}, -5) = ':done' THEN substr(${id}, 6, length(${id}) - 10) END)`;
}

/** A process that asked to be told of its end and ended before @before: its notice is due. */
const UNREPORTED_PROCESS = `processes.notify_on_complete = 1 AND processes.ended_at < @before`;
/** Longest exit note kept: it explains an end, it is not the command's output. */
const MAX_EXIT_NOTE = 1000;

/**
 * Every statement the store runs, prepared once, as functions of plain values: they are
 * called by name through the gateway's connection (SqliteConnection), or by the CLI on its own
 * connection. Each function is one transaction's worth of work; JSON columns arrive encoded
 * and leave encoded; times come from the caller.
 */
export function sqliteOperations(db: Database.Database, retention: Retention) {
  const statement = <Row = unknown>(sql: string) => db.prepare<unknown[], Row>(sql);
  const appendMessage = statement('INSERT INTO messages (id, routing, text, received_at, destination) VALUES (?, ?, ?, ?, ?)');
  const removeMessage = statement('DELETE FROM messages WHERE id = ?');
  // Ids are time-ordered: within a millisecond they keep the order messages were accepted in.
  const pendingMessages = statement<MessageRow>('SELECT id, routing, text, received_at FROM messages ORDER BY received_at, id');
  const intakeAnswer = statement<{ answer: string }>('SELECT answer FROM intake_keys WHERE key = ? AND expires_at > ?');
  const rememberKey = statement(
    'INSERT INTO intake_keys (key, answer, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET answer = excluded.answer, expires_at = excluded.expires_at',
  );
  // What intake checks, in one read: its destination's waiting messages and open deliveries, and all open deliveries.
  const counts = statement<{ mine: number; total: number }>(
    `SELECT coalesce((SELECT waiting + open FROM open_counts WHERE destination = ?), 0) AS mine,
       (SELECT open FROM open_counts WHERE destination = '') AS total`,
  );
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
    `INSERT OR IGNORE INTO deliveries (id, kind, destination, text, in_reply_to, origin, status, head, attempts, attempts_since, due_at, lease_until, created_at, attachment)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`,
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
  // Literal statuses: each DELETE then reads its own partial index by age.
  const pruneDone = statement(
    `DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE status = 'done' AND finished_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  const pruneFailed = statement(
    `DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE status = 'failed' AND finished_at < ? LIMIT ${PRUNE_BATCH})`,
  );
  const pruneKeys = statement(`DELETE FROM intake_keys WHERE key IN (SELECT key FROM intake_keys WHERE expires_at <= ? LIMIT ${PRUNE_BATCH})`);
  const pruneHistory = statement(`DELETE FROM history WHERE seq IN (SELECT seq FROM history WHERE at < ? LIMIT ${PRUNE_BATCH})`);
  const historyMs = retention.historyMs ?? HISTORY_RETENTION_MS;
  const getHome = statement<{ destination: string }>('SELECT destination FROM homes WHERE platform = ?');
  const setHome = statement(
    'INSERT INTO homes (platform, destination) VALUES (?, ?) ON CONFLICT (platform) DO UPDATE SET destination = excluded.destination',
  );
  const getEpoch = statement<{ epoch: number }>('SELECT epoch FROM conversations WHERE key = ?');
  const nextEpoch = statement<{ epoch: number }>(
    'INSERT INTO conversations (key, epoch) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch',
  );

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

  const tools = toolOperations(db);

  const open = (destination: string): number => openOf.get(destination)?.open ?? 0;
  /** Finishes a delivery being sent under `leaseUntil`; true when the next of its destination became its head. */
  const finishDelivery = (id: string, status: 'done' | 'failed', error: string | null, now: number, leaseUntil: number): boolean => {
    const finished = finish.get(status, error?.slice(0, 1000) ?? null, now, id, leaseUntil);
    if (finished === undefined) return false;
    prune(now);
    return promote.run(finished.destination).changes === 1;
  };
  let nextPrune = 0;
  const prune = (now: number): void => {
    if (now < nextPrune) return;
    const deleted = [
      pruneDone.run(now - retention.doneMs).changes,
      pruneFailed.run(now - retention.failedMs).changes,
      pruneKeys.run(now).changes,
      pruneHistory.run(now - historyMs).changes,
    ];
    nextPrune = now + (deleted.some((n) => n === PRUNE_BATCH) ? PRUNE_BACKLOG_INTERVAL_MS : PRUNE_INTERVAL_MS);
  };

  return {
    /**
     * Appends an accepted message unless its idempotency key was seen (the first answer is
     * returned) or its destination's open deliveries, or all of them, are at their cap. A
     * message waiting for its turn counts as a delivery to come of its destination.
     */
    acceptMessage(id: string, routing: string, text: string, receivedAt: number, checks: EncodedAcceptChecks): AcceptResult {
      if (checks.idempotencyKey !== undefined) {
        const seen = intakeAnswer.get(checks.idempotencyKey, receivedAt);
        if (seen !== undefined) return { status: 'duplicate', answer: seen.answer };
      }
      const { mine, total } = counts.get(checks.destination)!;
      if (mine >= checks.maxOpenPerDestination) return { status: 'full', scope: 'destination', open: mine };
      if (total >= checks.maxOpenTotal) return { status: 'full', scope: 'total', open: total };
      appendMessage.run(id, routing, text, receivedAt, checks.destination);
      if (checks.idempotencyKey !== undefined) rememberKey.run(checks.idempotencyKey, checks.answer, checks.keyExpiresAt);
      return { status: 'accepted' };
    },
    completeMessage(id: string): void {
      removeMessage.run(id);
    },
    pendingMessages: (): MessageRow[] => pendingMessages.all(),
    /**
     * Records a delivery. With nothing of its destination open it is that destination's head
     * and is claimed at once (`claimed`: the caller sends it now); otherwise it waits its turn.
     */
    addDelivery(
      id: string,
      kind: string,
      destination: string,
      text: string,
      inReplyTo: string | null,
      origin: string,
      now: number,
      leaseUntil: number,
      attachment: string | null = null,
    ): AddResult {
      const head = open(destination) === 0;
      const added = addDelivery.run(id, kind, destination, text, inReplyTo, origin, head ? 'sending' : 'pending', head ? 1 : 0, now, now, head ? leaseUntil : null, now, attachment);
      return added.changes === 0 ? 'exists' : head ? 'claimed' : 'queued';
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
    getHome: (platform: string): string | undefined => getHome.get(platform)?.destination,
    setHome(platform: string, destination: string): void {
      setHome.run(platform, destination);
    },
    epoch: (key: string): number => getEpoch.get(key)?.epoch ?? 0,
    nextEpoch: (key: string): number => nextEpoch.get(key)!.epoch,
    ...tools,
  };
}

/**
 * The statements of the tools' tables (processes, schedules, history). None of them runs on
 * a message's way from intake to its reply: only tools call these.
 */
function toolOperations(db: Database.Database) {
  const statement = <Row = unknown>(sql: string) => db.prepare<unknown[], Row>(sql);
  const countOf = (table: string) => ({
    mine: statement<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE destination = ?`),
    total: statement<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`),
  });
  /** Inserts the row unless its destination's or the table's count is at its cap, in the caller's transaction. */
  const capped = <Row extends { destination: string }>(table: string, columns: string) => {
    const counts = countOf(table);
    const insert = statement(`INSERT INTO ${table} (${columns}) VALUES (${columns.split(', ').map((column) => `@${column}`).join(', ')}) ON CONFLICT (id) DO NOTHING`);
    return (row: Row, caps: BackgroundCaps): CappedAdd => {
      const mine = counts.mine.get(row.destination)!.n;
      if (mine >= caps.maxPerDestination) return { status: 'full', scope: 'destination', open: mine };
      // Caps are small and nothing is added past them: counting the table costs that many entries at most.
      const total = counts.total.get()!.n;
      if (total >= caps.maxTotal) return { status: 'full', scope: 'total', open: total };
      return insert.run(row).changes === 1 ? { status: 'added' } : { status: 'taken' };
    };
  };

  const addProcess = capped<ProcessRow>('processes', PROCESS_COLUMNS);
  const getProcess = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes WHERE id = ?`);
  const allProcesses = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes ORDER BY rowid`);
  const processesOf = statement<ProcessRow>(`SELECT ${PROCESS_COLUMNS} FROM processes WHERE destination = ? ORDER BY rowid`);
  const processEnded = statement(`UPDATE processes SET ended_at = ?, exit_code = ?, exit_signal = ?, exit_note = ? WHERE id = ?`);
  const processProgressed = statement(`UPDATE processes SET progress_sent = ? WHERE id = ?`);
  const removeProcess = statement(`DELETE FROM processes WHERE id = ?`);
  // Its notice looked up by id: one row at most, recorded but not done, or none at all.
  const unreportedProcesses = statement<UnreportedProcessRow>(
    `SELECT ${PROCESS_COLUMNS.split(', ').map((column) => `processes.${column}`).join(', ')},
       notice.status AS notice_status, notice.kind AS notice_kind, notice.destination AS notice_destination, notice.origin AS notice_origin,
       notice.attempts AS notice_attempts, notice.attempts_since AS notice_attempts_since, notice.due_at AS notice_due_at,
       notice.lease_until AS notice_lease_until, notice.last_error AS notice_last_error, notice.finished_at AS notice_finished_at
     FROM processes LEFT JOIN deliveries AS notice ON notice.id = 'proc:' || processes.id || ':done'
     WHERE ${UNREPORTED_PROCESS} AND (notice.status IS NULL OR notice.status <> 'done')
       AND (@filtered = 0 OR ${destinationMatches('processes.destination')} OR ${originMatches('processes.origin')})
     ORDER BY processes.ended_at DESC, processes.id DESC LIMIT @limit`,
  );

  const addSchedule = capped<ScheduleRow>('schedules', SCHEDULE_COLUMNS);
  const dueSchedules = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE next_at <= ? ORDER BY next_at, id LIMIT ?`);
  const nextScheduleAt = statement<{ at: number | null }>(`SELECT MIN(next_at) AS at FROM schedules`);
  const allSchedules = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules ORDER BY next_at, id`);
  const schedulesOf = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE destination = ? ORDER BY next_at, id`);
  const getSchedule = statement<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = ?`);
  // Compare-and-set on next_at: of two runners of the same run, only the first moves it.
  const rescheduled = statement(`UPDATE schedules SET next_at = ? WHERE id = ? AND next_at = ?`);
  const finishedSchedule = statement(`DELETE FROM schedules WHERE id = ? AND next_at = ?`);
  const removeSchedule = statement(`DELETE FROM schedules WHERE id = ?`);
  // A run's destination: the origin's chat (the destination column), an explicit target, or the
  // home channel of the target's platform (the origin's for a bare `home`, unless a damaged
  // origin is not JSON: json_extract would fail the whole read), joined by its key.
  const homeTarget = `(substr(schedules.target, 1, 5) = 'home:' AND instr(substr(schedules.target, 6), ':') = 0)`;
  const explicitTarget = `(CASE WHEN schedules.target <> 'origin' AND schedules.target <> 'home' AND NOT ${homeTarget} THEN schedules.target END)`;
  const overdueSchedules = statement<ScheduleRow>(
    `SELECT ${SCHEDULE_COLUMNS.split(', ').map((column) => `schedules.${column}`).join(', ')}
     FROM schedules LEFT JOIN homes ON @filtered = 1 AND homes.platform = (CASE WHEN schedules.target = 'home' AND json_valid(schedules.origin)
       THEN json_extract(schedules.origin, '$.session.platform') WHEN ${homeTarget} THEN substr(schedules.target, 6) END)
     WHERE schedules.next_at < @before
       AND (@filtered = 0 OR ${destinationMatches('schedules.destination')} OR ${destinationMatches(explicitTarget)}
         OR ${destinationMatches('homes.destination')} OR ${originMatches('schedules.origin')})
     ORDER BY schedules.next_at DESC, schedules.id DESC LIMIT @limit`,
  );

  const appendHistory = statement(
    `INSERT INTO history (session_id, destination, role, text, source, extra, at) VALUES (@session_id, @destination, @role, @text, @source, @extra, @at)`,
  );
  // Everything up to the `keep`+1-th newest goes; each query names its partial index's condition.
  const trimSession = statement(
    `DELETE FROM history WHERE session_id = @session_id AND seq <= (
       SELECT seq FROM history WHERE session_id = @session_id ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
  );
  const trimMirrored = statement(
    `DELETE FROM history WHERE session_id IS NULL AND destination = @destination AND seq <= (
       SELECT seq FROM history WHERE session_id IS NULL AND destination = @destination ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
  );
  const recentHistory = statement<HistoryRow>(
    `SELECT ${HISTORY_COLUMNS} FROM (
       SELECT seq, ${HISTORY_COLUMNS} FROM (SELECT seq, ${HISTORY_COLUMNS} FROM history WHERE session_id = @session_id ORDER BY seq DESC LIMIT @limit)
       UNION ALL
       SELECT seq, ${HISTORY_COLUMNS} FROM (
         SELECT seq, ${HISTORY_COLUMNS} FROM history WHERE session_id IS NULL AND destination = @destination ORDER BY seq DESC LIMIT @limit)
       ORDER BY seq DESC LIMIT @limit)
     ORDER BY seq`,
  );

  return {
    /** Adds a background process unless a cap refuses it; a duplicate id fails the call. */
    addProcess,
    getProcess: (id: string): ProcessRow | undefined => getProcess.get(id),
    allProcesses: (): ProcessRow[] => allProcesses.all(),
    processesOf: (destination: string): ProcessRow[] => processesOf.all(destination),
    processEnded(id: string, endedAt: number, code: number | null, signal: string | null, note: string | null): void {
      processEnded.run(endedAt, code, signal, note?.slice(0, MAX_EXIT_NOTE) ?? null, id);
    },
    processProgressed(id: string, progressSent: number): void {
      processProgressed.run(progressSent, id);
    },
    removeProcess(id: string): void {
      removeProcess.run(id);
    },
    /** Ended processes to report, ended before `before`, whose notice is not done; latest end first. */
    unreportedProcesses: (parameters: OverdueParameters): UnreportedProcessRow[] => unreportedProcesses.all(parameters),
    /** Adds a reminder or cron job unless a cap refuses it; a duplicate id fails the call. */
    addSchedule,
    dueSchedules: (now: number, limit: number): ScheduleRow[] => dueSchedules.all(now, limit),
    nextScheduleAt: (): number | undefined => nextScheduleAt.get()?.at ?? undefined,
    allSchedules: (): ScheduleRow[] => allSchedules.all(),
    schedulesOf: (destination: string): ScheduleRow[] => schedulesOf.all(destination),
    getSchedule: (id: string): ScheduleRow | undefined => getSchedule.get(id),
    /** Due again at `nextAt`, or removed when null, if still due at `ranAt`; true when it changed. */
    advanceSchedule: (id: string, ranAt: number, nextAt: number | null): boolean =>
      (nextAt === null ? finishedSchedule.run(id, ranAt) : rescheduled.run(nextAt, id, ranAt)).changes === 1,
    removeSchedule: (id: string): boolean => removeSchedule.run(id).changes === 1,
    /** Schedules due before `before` (their run has not happened), latest due first. */
    overdueSchedules: (parameters: OverdueParameters): ScheduleRow[] => overdueSchedules.all(parameters),
    /** Appends a session's entries in order and keeps its newest `keep`. */
    appendHistory(sessionId: string, destination: string, entries: readonly HistoryRow[], keep: number): void {
      for (const entry of entries) appendHistory.run({ session_id: sessionId, destination, ...entry });
      trimSession.run({ session_id: sessionId, keep });
    },
    /** Stores an entry every session of the destination sees, and keeps the destination's newest `keep` of them. */
    mirrorHistory(destination: string, entry: HistoryRow, keep: number): void {
      appendHistory.run({ session_id: null, destination, ...entry });
      trimMirrored.run({ destination, keep });
    },
    /** The newest `limit` of the session's entries and the destination's mirrored ones, oldest first. */
    recentHistory: (sessionId: string, destination: string, limit: number): HistoryRow[] =>
      recentHistory.all({ session_id: sessionId, destination, limit }),
  };
}

export type SqliteOperations = ReturnType<typeof sqliteOperations>;
export type OperationName = keyof SqliteOperations;

/** The operations that only read: all a store opened read-only runs; it refuses the others by name. */
export const READ_OPERATIONS: ReadonlySet<OperationName> = new Set<OperationName>([
  'pendingMessages',
  'listDeliveries',
  'overdueDeliveries',
  'deliveryStates',
  'pressure',
  'getHome',
  'epoch',
  'getProcess',
  'allProcesses',
  'processesOf',
  'unreportedProcesses',
  'dueSchedules',
  'nextScheduleAt',
  'allSchedules',
  'schedulesOf',
  'getSchedule',
  'overdueSchedules',
  'recentHistory',
]);
