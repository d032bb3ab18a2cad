import { Type } from 'typebox';
import { formatDestination } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import { ThreadlineError } from '../../errors.js';
import { requireSession } from '../../session/index.js';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import type { CronToolContext } from './cron-tool-context.js';

/** `remove_schedule` (admins): removes a job of this chat and thread; another chat's is not found here. */
export function removeScheduleTool(context: CronToolContext): Tool {
  return defineTool({
    name: 'remove_schedule',
    description: 'Removes a reminder or cron job of this chat by its id (list_schedules shows them).',
    input: Type.Object({ id: Type.String({ minLength: 1, maxLength: 40 }) }, { additionalProperties: false }),
    adminOnly: true,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    async run(args) {
      const id = (args['id'] as string).trim();
      const { schedules } = context.services.store;
      const here = formatDestination(destinationOf(requireSession()));
      const job = await schedules.get(id);
      // Another chat's job answers as a missing one: its existence is not this chat's business.
      if (job === undefined || formatDestination(job.destination) !== here || !(await schedules.remove(id))) {
        throw new ThreadlineError('TL_TOOL_INPUT', `No job "${id.slice(0, 40)}" in this chat; list_schedules shows this chat's jobs`);
      }
      await context.scheduler.removed(job);
      return { text: `Removed ${job.cron === undefined ? 'reminder' : 'cron job'} ${id}.` };
    },
  });
}
