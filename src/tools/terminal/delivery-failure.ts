import { ThreadlineError, type ErrorCode } from '../../errors.js';

/** Failures that pass: the store, a full outbox, a platform down for now. Cron retries the same ones. */
const TRANSIENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['TL_STORE_FAILED', 'TL_SHUTTING_DOWN', 'TL_OUTBOX_FULL', 'TL_CHAT_BACKLOG_FULL', 'TL_DELIVERY_FAILED']);

/** True when trying again cannot help: a platform no longer enabled, a refused or invalid routing. */
export function isPermanentFailure(error: unknown): boolean {
  return error instanceof ThreadlineError && !TRANSIENT.has(error.code);
}
