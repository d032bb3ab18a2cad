import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

export interface MessageRow {
  id: string;
  routing: string;
  text: string;
  received_at: number;
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

/** The statements of accepted messages and their intake keys. */
export function messageOperations(db: Database.Database) {
  const statement = preparer(db);
  const appendMessage = statement('INSERT INTO messages (id, routing, text, received_at, destination) VALUES (?, ?, ?, ?, ?)');
  const removeMessage = statement('DELETE FROM messages WHERE id = ?');
  // A completed message is never replayed: what its calls recorded goes with it (a lookup, no write, when none did).
  const forgetCalls = statement('DELETE FROM call_results WHERE message_id = ?');
  // Ids are time-ordered: within a millisecond they keep the order messages were accepted in.
  // In place, the same value: a page written and committed like any write, nothing changed.
  const probeWrite = statement(`UPDATE open_counts SET open = open WHERE destination = ''`);
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
      forgetCalls.run(id);
    },
    pendingMessages: (): MessageRow[] => pendingMessages.all(),
    /** A write that changes nothing: whether the database takes writes. */
    probeWrite(): void {
      probeWrite.run();
    },
  };
}
