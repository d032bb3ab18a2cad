/** What a job of the schedules queue carries: the record's id, and for a one-off run its due time. */
export interface ScheduleJobData {
  readonly id: string;
  readonly dueAt?: number;
}

/** The job of one run of record `id` due at `dueAt`: added twice, it exists once. */
export function dueJobId(id: string, dueAt: number): string {
  return `due:${id}:${dueAt}`;
}

/** The job of the tick of scheduler `id` due at `dueAt`, as BullMQ names it. */
export function tickJobId(id: string, dueAt: number): string {
  return `repeat:${id}:${dueAt}`;
}

/** A job scheduler's job is named `repeat:<scheduler id>:<due millis>` by BullMQ. */
const SCHEDULER_JOB_ID = /^repeat:.+:(\d+)$/;

/** The due time of a scheduler's tick named `jobId`, or undefined when it is not one. */
export function tickOf(jobId: string | undefined): number | undefined {
  const tick = jobId === undefined ? null : SCHEDULER_JOB_ID.exec(jobId);
  return tick === null ? undefined : Number(tick[1]);
}

/**
 * The record id and due time of a job of the schedules queue, or undefined when its data is
 * not one. A one-off run carries its due time; a scheduler's tick is named by it.
 */
export function scheduleJobOf(job: { readonly id?: string | undefined; readonly data: unknown }): { id: string; dueAt: number | undefined } | undefined {
  const data = job.data as Partial<Record<keyof ScheduleJobData, unknown>> | null;
  if (data === null || typeof data !== 'object' || typeof data.id !== 'string' || data.id === '') return undefined;
  if (typeof data.dueAt === 'number' && Number.isFinite(data.dueAt)) return { id: data.id, dueAt: data.dueAt };
  return { id: data.id, dueAt: tickOf(job.id) };
}
