import { Type } from 'typebox';
import { ThreadlineError } from '../../errors.js';
import { parseTarget, type Target } from '../../session/target.js';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import { addJob, type AddedJob } from './add-job.js';
import { DEFAULT_TIMEZONE, checkTimezone, parseCron } from './cron-expression.js';
import type { CronToolContext } from './cron-tool-context.js';
import { MAX_JOB_TEXT_CHARS, checkJobText } from './job-text.js';
import { parseDelay } from './parse-delay.js';

const parameters = Type.Object(
  {
    cron: Type.Optional(
      Type.String({ minLength: 1, maxLength: 120, description: 'A cron expression: 5 fields (minute first) or 6 (second first), at most once a minute' }),
    ),
    delay: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Instead of cron, one run after a delay: 90s, 10m, 2h, 1d' })),
    text: Type.String({ minLength: 1, maxLength: MAX_JOB_TEXT_CHARS, description: 'What each run delivers' }),
    target: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: 'origin (default), home, home:<platform>, or platform:chat[:thread]' }),
    ),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The IANA time zone the cron expression is read in; default UTC' })),
  },
  { additionalProperties: false },
);

/** `schedule` (admins): a cron job or a one-shot, delivered to this chat, a home channel or any chat. */
export function scheduleTool(context: CronToolContext): Tool {
  return defineTool({
    name: 'schedule',
    description:
      'Schedules a message: repeating on a cron expression, or once after a delay (give exactly one of cron, delay). Delivers to this chat unless a target is given.',
    input: parameters,
    adminOnly: true,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    async run(args, call) {
      const { services } = context;
      const cron = args['cron'] as string | undefined;
      const delay = args['delay'] as string | undefined;
      if ((cron === undefined) === (delay === undefined)) {
        throw new ThreadlineError('TL_TOOL_INPUT', 'schedule takes exactly one of cron (repeating) or delay (once)');
      }
      const text = checkJobText(args['text'] as string);
      // Read first, so a misspelt target is named before the schedule; addJob checks the rest.
      const target = parseTarget((args['target'] as string | undefined) ?? 'origin');
      const now = services.clock.now();
      const timezone = args['timezone'] as string | undefined;
      let job: AddedJob;
      if (cron === undefined) {
        // A time zone only means something to a cron expression: with a delay it is a mistake worth saying.
        if (timezone !== undefined) throw new ThreadlineError('TL_TOOL_INPUT', 'timezone goes with cron; a delay counts from now in any zone');
        job = await addJob(context, { text, target, nextAt: now + parseDelay(delay!), by: 'admin' }, call.idempotencyKey);
      } else {
        job = await addCronJob(context, cron.trim(), timezone, text, target, now, call.idempotencyKey);
      }
      const kind = job.cron === undefined ? 'One-shot' : `Cron job "${job.cron}" (${job.timezone ?? DEFAULT_TIMEZONE})`;
      return { text: `${kind} ${job.id} scheduled to ${job.target}; next run ${new Date(job.nextAt).toISOString()}.` };
    },
  });
}

/** Stores a cron job after checking its zone and expression; TL_TOOL_INPUT when it never runs again. */
async function addCronJob(
  context: CronToolContext,
  cron: string,
  zone: string | undefined,
  text: string,
  target: Target,
  now: number,
  callKey: string | undefined,
): Promise<AddedJob> {
  const timezone = zone === undefined ? undefined : checkTimezone(zone);
  const nextAt = parseCron(cron, timezone).nextAfter(now);
  if (nextAt === undefined) throw new ThreadlineError('TL_TOOL_INPUT', `"${cron.slice(0, 80)}" never runs again; check its date fields`);
  return addJob(context, { text, target, cron, timezone: timezone === DEFAULT_TIMEZONE ? undefined : timezone, nextAt, by: 'admin' }, callKey);
}
