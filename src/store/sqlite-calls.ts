import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

/** The statements of recorded tool call results; completeMessage deletes a message's. */
export function callOperations(db: Database.Database) {
  const statement = preparer(db);
  // The first result of a key stands: a replay that got here once more records nothing new.
  const recordCall = statement('INSERT OR IGNORE INTO call_results (key, message_id, result) VALUES (?, ?, ?)');
  const recordedCall = statement<{ result: string }>('SELECT result FROM call_results WHERE key = ? AND message_id = ?');
  return {
    recordCall(key: string, messageId: string, result: string): void {
      recordCall.run(key, messageId, result);
    },
    recordedCall: (key: string, messageId: string): string | undefined => recordedCall.get(key, messageId)?.result,
  };
}
