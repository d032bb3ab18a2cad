import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

/** The statements of conversation epochs: a new conversation of a key is its next epoch. */
export function conversationOperations(db: Database.Database) {
  const statement = preparer(db);
  const getEpoch = statement<{ epoch: number }>('SELECT epoch FROM conversations WHERE key = ?');
  const nextEpoch = statement<{ epoch: number }>(
    'INSERT INTO conversations (key, epoch) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch',
  );
  return {
    epoch: (key: string): number => getEpoch.get(key)?.epoch ?? 0,
    nextEpoch: (key: string): number => nextEpoch.get(key)!.epoch,
  };
}
