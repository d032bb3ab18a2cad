import type { CommandButton, Delivery, DeliveryKind, Destination } from '../session/delivery.js';
import type { RoutingSnapshot } from '../session/index.js';
import type { JobContext } from './job-context.js';

/**
 * A delivery as its BullMQ job carries it: the Delivery itself (what list() shows and the
 * worker sends), the context it was recorded in, and the state of its current series of attempts.
 */
export interface DeliveryJobData extends Delivery {
  /** The producing context: the consumer resumes its session from here alone. */
  readonly context: JobContext;
  /** When the next attempt is due; absent until an attempt failed. */
  readonly dueAt?: number;
  /** The last attempt's error, while it is retried. */
  readonly lastError?: string;
  /** Why it must not be sent (the misroute guard refused it): its worker fails it at once, a dead letter. */
  readonly refused?: string;
}

const KINDS: ReadonlySet<string> = new Set<DeliveryKind>(['reply', 'notification', 'cron', 'send']);

/**
 * The BullMQ job id of delivery `id`: BullMQ refuses ids holding ':' and ids that read as
 * integers, and delivery ids may hold both, so the id is base64url-encoded behind a letter.
 */
export function deliveryJobId(id: string): string {
  return `d${Buffer.from(id, 'utf8').toString('base64url')}`;
}

/** The delivery id of a job id deliveryJobId made; undefined for any other. */
export function deliveryIdOfJob(jobId: string): string | undefined {
  if (!jobId.startsWith('d') || !/^[A-Za-z0-9_-]*$/.test(jobId.slice(1))) return undefined;
  return Buffer.from(jobId.slice(1), 'base64url').toString('utf8');
}

/**
 * Reads job data back, checking what the worker relies on: a job written by another version,
 * or edited in Redis, is reported as unusable (`problem`) instead of crashing the worker.
 * The routing snapshots are checked later, when they are resumed.
 */
export function parseDeliveryJob(data: unknown): { readonly job: DeliveryJobData } | { readonly problem: string } {
  if (typeof data !== 'object' || data === null) return { problem: 'the job carries no delivery' };
  const job = data as Record<string, unknown>;
  const strings = ['id', 'text'] as const;
  for (const name of strings) if (typeof job[name] !== 'string') return { problem: `the job's ${name} is not a string` };
  if (typeof job.kind !== 'string' || !KINDS.has(job.kind)) return { problem: "the job's kind is not one threadline knows" };
  if (!isDestination(job.destination)) return { problem: "the job's destination is not a platform and chat" };
  for (const name of ['attempts', 'createdAt', 'attemptsSince'] as const) {
    if (typeof job[name] !== 'number' || !Number.isFinite(job[name])) return { problem: `the job's ${name} is not a number` };
  }
  if (job.dueAt !== undefined && typeof job.dueAt !== 'number') return { problem: "the job's dueAt is not a number" };
  if (job.refused !== undefined && typeof job.refused !== 'string') return { problem: "the job's refusal is not a string" };
  if (typeof job.origin !== 'object' || job.origin === null) return { problem: 'the job carries no origin routing' };
  if (typeof job.context !== 'object' || job.context === null) return { problem: 'the job carries no context' };
  return { job: data as DeliveryJobData };
}

/** The Delivery of job data, without what only the queue needs. */
export function deliveryOf(job: DeliveryJobData): Delivery {
  return {
    id: job.id,
    kind: job.kind,
    destination: job.destination,
    text: job.text,
    ...(job.inReplyTo === undefined ? {} : { inReplyTo: job.inReplyTo }),
    ...(job.attachment === undefined ? {} : { attachment: job.attachment }),
    ...(typeof job.replaces === 'string' ? { replaces: job.replaces } : {}),
    ...(isButton(job.button) ? { button: job.button } : {}),
    origin: job.origin as RoutingSnapshot,
    attempts: job.attempts,
    createdAt: job.createdAt,
    attemptsSince: job.attemptsSince,
  };
}

function isDestination(value: unknown): value is Destination {
  if (typeof value !== 'object' || value === null) return false;
  const { platform, chatId, threadId } = value as Record<string, unknown>;
  return typeof platform === 'string' && typeof chatId === 'string' && (threadId === undefined || typeof threadId === 'string');
}

function isButton(value: unknown): value is CommandButton {
  const button = value as Partial<CommandButton> | undefined;
  return typeof button === 'object' && button !== null && typeof button.label === 'string' && typeof button.command === 'string';
}
