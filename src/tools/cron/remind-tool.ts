import { Type } from 'typebox';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import { addJob } from './add-job.js';
import type { CronToolContext } from './cron-tool-context.js';
import { MAX_JOB_TEXT_CHARS, checkJobText } from './job-text.js';
import { parseDelay } from './parse-delay.js';

const parameters = Type.Object(
  {
    delay: Type.String({ minLength: 1, maxLength: 40, description: 'How long from now: 90s, 10m, 2h, 1d, 1h30m, or plain seconds' }),
    text: Type.String({ minLength: 1, maxLength: MAX_JOB_TEXT_CHARS, description: 'What to say when it is time' }),
  },
  { additionalProperties: false },
);

/** `remind`: one message to this chat and thread after a delay; anyone may set one. */
export function remindTool(context: CronToolContext): Tool {
  return defineTool({
    name: 'remind',
    description: 'Sends a reminder to this chat (and thread) once, after a delay from 1 second to 365 days.',
    input: parameters,
    adminOnly: false,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    async run(args, call) {
      const text = checkJobText(args['text'] as string);
      const delay = args['delay'] as string;
      const nextAt = context.services.clock.now() + parseDelay(delay);
      const job = await addJob(context, { text, target: { to: 'origin' }, nextAt, by: call.byAdmin === true ? 'admin' : 'user' }, call.idempotencyKey);
      return { text: `Reminder ${job.id} set for ${new Date(job.nextAt).toISOString()} (in ${delay.trim()}).` };
    },
  });
}
