import { ThreadlineError, type ErrorCode } from '../errors.js';

/** Failures of the moment: the store, a stopping gateway, a full outbox or chat, a platform down for now. */
const TRANSIENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['TL_STORE_FAILED', 'TL_SHUTTING_DOWN', 'TL_OUTBOX_FULL', 'TL_CHAT_BACKLOG_FULL', 'TL_DELIVERY_FAILED']);

/**
 * True when a delivery handed over by background work may succeed if tried again later;
 * false when waiting cannot help (a platform no longer enabled, a home unset, a refused route).
 * An error that is no ThreadlineError is unknown, and counts as of the moment.
 */
export function isTransientFailure(error: unknown): boolean {
  return !(error instanceof ThreadlineError) || TRANSIENT.has(error.code);
}
