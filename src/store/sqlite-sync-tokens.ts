import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

/** The statements of event streams' sync tokens: each advanced only from the token stored. */
export function syncTokenOperations(db: Database.Database) {
  const statement = preparer(db);
  const getToken = statement<{ token: string }>('SELECT token FROM sync_tokens WHERE stream = ?');
  const firstToken = statement('INSERT INTO sync_tokens (stream, token) VALUES (?, ?) ON CONFLICT (stream) DO NOTHING');
  const nextToken = statement('UPDATE sync_tokens SET token = ? WHERE stream = ? AND token = ?');
  return {
    getSyncToken: (stream: string): string | undefined => getToken.get(stream)?.token,
    /** `previous` null: only when none is stored yet. True when it changed. */
    advanceSyncToken(stream: string, previous: string | null, token: string): boolean {
      const result = previous === null ? firstToken.run(stream, token) : nextToken.run(token, stream, previous);
      return result.changes === 1;
    },
  };
}
