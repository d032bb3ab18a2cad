import { ThreadlineError } from '../errors.js';
import type { RoutingSnapshot } from '../session/index.js';
import type { JobContext } from './job-context.js';

/** What a waiting message holds in Redis (its mailbox's data): the message and the context it was accepted in. Plain JSON. */
export interface InboundJobData {
  /** The message id: it is queued once by it. */
  readonly id: string;
  /** The session key: mailboxes and conversation epochs are kept by it. */
  readonly key: string;
  readonly text: string;
  readonly context: JobContext;
}

/**
 * Checks the shape of message data read back from Redis, which anyone who can write there could
 * have changed. The routing snapshot itself is validated later, by consumerContext.
 * Throws TL_SNAPSHOT_INVALID naming the first field that is wrong.
 */
export function parseInboundJobData(data: unknown): InboundJobData {
  const record = objectOf(data, 'the job data');
  const context = objectOf(record.context, 'context');
  const carrier = objectOf(context.carrier ?? {}, 'context.carrier');
  for (const [name, value] of Object.entries(carrier)) {
    if (typeof value !== 'string') throw invalid(`context.carrier.${name} is not a string`);
  }
  return {
    id: stringOf(record.id, 'id'),
    key: stringOf(record.key, 'key'),
    text: stringOf(record.text, 'text'),
    context: { routing: objectOf(context.routing, 'context.routing') as unknown as RoutingSnapshot, carrier: carrier as Record<string, string> },
  };
}

function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function stringOf(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalid(`${what} is not a string`);
  return value;
}

function invalid(reason: string): ThreadlineError {
  return new ThreadlineError('TL_SNAPSHOT_INVALID', `A waiting message is damaged: ${reason}; it is kept aside (turns:unusable)`);
}
