import type Database from 'better-sqlite3';
import { callOperations } from './sqlite-calls.js';
import { conversationOperations } from './sqlite-conversations.js';
import { historyOperations } from './sqlite-history.js';
import { homeOperations } from './sqlite-homes.js';
import { messageOperations } from './sqlite-messages.js';
import { outboxOperations } from './sqlite-outbox.js';
import { processOperations } from './sqlite-processes.js';
import type { Retention } from './retention.js';
import { pruner } from './sqlite-prune.js';
import { scheduleOperations } from './sqlite-schedules.js';
import { syncTokenOperations } from './sqlite-sync-tokens.js';

// Where callers found them before the statements were split by table.
export { openDatabase, openReadOnlyDatabase, type ReadOnlyDatabase } from './sqlite-database.js';
export { HISTORY_RETENTION_MS, PRUNE_BATCH } from './sqlite-prune.js';
export type { Retention } from './retention.js';

/**
 * Every statement the store runs, prepared once, as functions of plain values: they are
 * called by name through the gateway's connection (SqliteConnection), or by the CLI on its own
 * connection. Each function is one transaction's worth of work; JSON columns arrive encoded
 * and leave encoded; times come from the caller. The tools' tables (processes, schedules,
 * history) are written by tools alone, never on a message's way from intake to its reply.
 */
export function sqliteOperations(db: Database.Database, retention: Retention) {
  return {
    ...messageOperations(db),
    ...outboxOperations(db, pruner(db, retention)),
    ...homeOperations(db),
    ...conversationOperations(db),
    ...processOperations(db),
    ...scheduleOperations(db),
    ...historyOperations(db),
    ...callOperations(db),
    ...syncTokenOperations(db),
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
  'recordedCall',
  'getSyncToken',
]);
