import type { Worker, WorkerOptions } from 'bullmq';
import type { Logger } from 'pino';
import { redisFailure } from '../store/redis/redis-connection.js';

/** How a worker's jobs follow the instance lease (THREADLINE_INSTANCE_LEASE_MS); BullMQ.s defaults when unset. */
export interface LeaseTimings {
  /** How long a running job's lock lasts unrenewed: a lost instance's job runs elsewhere after it. */
  readonly lockDurationMs?: number | undefined;
  /** How often this instance looks for the jobs of lost instances. */
  readonly stalledIntervalMs?: number | undefined;
}

/** A stall is an instance lost, never the job's fault: never a reason to give the job up. */
const MAX_STALLED_COUNT = 1_000_000;

/** A worker's options for its jobs' locks: a job whose instance is lost runs again elsewhere, however often. */
export function leaseWorkerOptions(timings: LeaseTimings): Pick<WorkerOptions, 'maxStalledCount' | 'lockDuration' | 'stalledInterval'> {
  return {
    maxStalledCount: MAX_STALLED_COUNT,
    ...(timings.lockDurationMs === undefined ? {} : { lockDuration: timings.lockDurationMs }),
    ...(timings.stalledIntervalMs === undefined ? {} : { stalledInterval: timings.stalledIntervalMs }),
  };
}

/** BullMQ's removeOnFail for jobs given up (damaged data, or retried for months): kept a week to be looked at, at most `count`. */
export function keptAWeek(count: number): { readonly age: number; readonly count: number } {
  return { age: 7 * 86_400, count };
}

/** Logs `worker`'s Redis failures, `what` naming it: BullMQ carries on by itself once Redis answers. */
export function logWorkerErrors(worker: Worker, logger: Logger, what: string): void {
  worker.on('error', (error) => logger.warn({ err: redisFailure(error), queue: worker.name }, `${what} worker failed in Redis; it goes on when Redis answers`));
}
