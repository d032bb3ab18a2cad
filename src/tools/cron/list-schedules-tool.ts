import { Type } from 'typebox';
import { destinationOf } from '../../session/routing-mismatch.js';
import { requireSession } from '../../session/index.js';
import type { ScheduleRecord } from '../../store/store.js';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import { DEFAULT_TIMEZONE } from './cron-expression.js';
import type { CronToolContext } from './cron-tool-context.js';

/** Characters of a job's text a listing shows: enough to recognise it. */
const PREVIEW_CHARS = 80;

/** `list_schedules`: the reminders and cron jobs of this chat and thread, soonest first. */
export function listSchedulesTool(context: CronToolContext): Tool {
  return defineTool({
    name: 'list_schedules',
    description: "Lists this chat's (and thread's) reminders and cron jobs: id, next run, schedule, target and text.",
    input: Type.Object({}, { additionalProperties: false }),
    adminOnly: false,
    // It shows the text of others' reminders: what they wrote, not what the caller asked for.
    trustedOutput: false,
    async run() {
      const jobs = await context.services.store.schedules.ofDestination(destinationOf(requireSession()));
      if (jobs.length === 0) return { text: 'No reminders or cron jobs in this chat.' };
      return { text: jobs.map(describeJob).join('\n') };
    },
  });
}

/** One line: `c1x2y3 next 2026-…Z, cron "0 9 * * 1" (UTC), to origin: text…`. */
export function describeJob(job: ScheduleRecord): string {
  const when = job.cron === undefined ? 'once' : `cron "${job.cron}" (${job.timezone ?? DEFAULT_TIMEZONE})`;
  const oneLine = job.text.replace(/\s+/g, ' ').trim();
  const preview = oneLine.length > PREVIEW_CHARS ? `${oneLine.slice(0, PREVIEW_CHARS)}…` : oneLine;
  return `${job.id} next ${new Date(job.nextAt).toISOString()}, ${when}, to ${job.target}: ${preview}`;
}
