// Its own module, not sqlite-operations: the public SqliteStore's declarations name it, and
// importing sqlite-operations' would make a user's type-check need better-sqlite3's types.
/** How long the store keeps what it no longer needs to run. */
export interface Retention {
  /** How long done deliveries are kept, so a turn replayed that late finds its replies sent. */
  readonly doneMs: number;
  /** How long failed deliveries (dead letters) are kept for listing and retrying. */
  readonly failedMs: number;
  /** How long history entries are kept; HISTORY_RETENTION_MS (sqlite-operations) when not given. */
  readonly historyMs?: number;
}
