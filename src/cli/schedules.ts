/**
 * `threadline schedules`: every reminder and cron job of the gateway, across chats, for an
 * operator (the chat commands see one chat's), and removing one. Works beside a running gateway.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { formatDestination } from '../session/delivery.js';
import type { ScheduleRecord } from '../store/store.js';
import { printable } from '../text/printable.js';
import { fail, withGatewayStore } from './cli-store.js';
import { dataDirOption } from './deliveries.js';
import type { CliIo } from './io.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 100_000;
const SHOWN_CHARS = 120;

interface ListOptions {
  readonly chat?: string;
  readonly user?: string;
  readonly json?: true;
  readonly limit: number;
  readonly dataDir?: string;
}

export function registerSchedules(program: Command, io: CliIo): void {
  const schedules = program
    .command('schedules')
    .description("list the gateway's reminders and cron jobs across chats, and remove one")
    .addHelpText(
      'after',
      '\nReads the store the gateway uses: the shared one on Redis with THREADLINE_REDIS_URL,\n' +
        'else <data dir>/threadline.db. A removed job does not run again, here or on any instance.\n\nExamples:\n' +
        '  threadline schedules list\n  threadline schedules list --user 42 --json\n  threadline schedules rm c1a2b3\n',
    );

  schedules
    .command('list')
    .description('list jobs, soonest first')
    .option('--chat <id>', 'only jobs asked for in this chat id (exact match)', nonEmpty)
    .option('--user <id>', 'only jobs asked for by this user id (exact match)', nonEmpty)
    .option('--json', 'print a JSON array instead of text')
    .option('--limit <n>', `at most this many (1 to ${MAX_LIMIT})`, parseLimit, DEFAULT_LIMIT)
    .addOption(dataDirOption())
    .action(async (options: ListOptions) => {
      const all = await withGatewayStore(options.dataDir, io, (store) => store.schedules.all());
      const chosen = all.filter(
        (job) =>
          (options.chat === undefined || job.origin.session.chatId === options.chat) &&
          (options.user === undefined || job.origin.session.userId === options.user),
      );
      const shown = chosen.slice(0, options.limit);
      io.out(options.json ? `${JSON.stringify(shown.map(toJson), null, 2)}\n` : toText(shown, chosen.length));
    });

  schedules
    .command('rm')
    .description('remove a job by id')
    .argument('<id>', 'the id `list` shows')
    .addOption(dataDirOption())
    .action(async (id: string, options: { readonly dataDir?: string }) => {
      const removed = await withGatewayStore(options.dataDir, io, (store) => store.schedules.remove(id));
      if (!removed) fail(io, `no job ${printable(id)} (see: threadline schedules list)`);
      io.out(`removed ${printable(id)}; it does not run again\n`);
    });
}

function toText(jobs: readonly ScheduleRecord[], matched: number): string {
  const lines = jobs.map((job) => {
    const { session } = job.origin;
    const kind = job.cron === undefined ? 'once' : `cron "${job.cron}"${job.timezone === undefined ? '' : ` (${job.timezone})`}`;
    const by = session.userId === undefined ? 'no user' : `user ${printable(session.userId)}`;
    return (
      `${job.id}  next ${new Date(job.nextAt).toISOString()}  ${kind}  in ${printable(formatDestination(job.destination))} by ${by}  to ${printable(job.target)}\n` +
      `  text: ${shown(job.text)}`
    );
  });
  const more = matched > jobs.length ? ` (${matched} matched; pass --limit for more)` : '';
  return [...lines, `${jobs.length} ${jobs.length === 1 ? 'job' : 'jobs'}, soonest first${more}`].join('\n') + '\n';
}

function toJson(job: ScheduleRecord): Record<string, unknown> {
  return {
    id: job.id,
    nextAt: new Date(job.nextAt).toISOString(),
    ...(job.cron === undefined ? {} : { cron: job.cron }),
    ...(job.timezone === undefined ? {} : { timezone: job.timezone }),
    chat: formatDestination(job.destination),
    platform: job.origin.session.platform,
    ...(job.origin.session.userId === undefined ? {} : { userId: job.origin.session.userId }),
    target: job.target,
    text: job.text,
    createdAt: new Date(job.createdAt).toISOString(),
  };
}

function shown(text: string): string {
  const flat = printable(text.replace(/\s+/g, ' '));
  return flat.length > SHOWN_CHARS ? `${flat.slice(0, SHOWN_CHARS)}…` : flat;
}

function nonEmpty(value: string): string {
  if (value === '') throw new InvalidArgumentError('Give an id.');
  return value;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > MAX_LIMIT) throw new InvalidArgumentError(`Give a whole number from 1 to ${MAX_LIMIT}.`);
  return limit;
}
