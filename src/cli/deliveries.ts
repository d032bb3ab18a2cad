/**
 * `threadline deliveries`: the outbox of a data dir, or the shared one on Redis, seen from
 * outside the gateway, to find dead letters and queue them again. It opens the store beside a
 * running gateway (WAL) and takes no data-dir lock, so it never stops one from starting.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { formatDestination, type DeliveryRecord } from '../session/delivery.js';
import { fail, withOutbox } from './cli-store.js';
import type { CliIo } from './io.js';
import { escapeChar, printable } from '../text/printable.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;
/** Message text and errors are shown cut to this many characters. */
const SHOWN_CHARS = 200;

interface ListOptions {
  readonly failed?: true;
  readonly chat?: string;
  readonly json?: true;
  readonly limit: number;
  readonly dataDir?: string;
}

interface RetryOptions {
  readonly allFailed?: true;
  readonly dataDir?: string;
}

export function registerDeliveries(program: Command, io: CliIo): void {
  const deliveries = program
    .command('deliveries')
    .description("inspect the gateway's outbox and send failed deliveries again")
    .addHelpText(
      'after',
      '\nThe store is <data dir>/threadline.db, the data dir is --data-dir, else\n' +
        'THREADLINE_DATA_DIR, else ./data. With THREADLINE_REDIS_URL set, the shared\n' +
        'outbox on Redis instead (THREADLINE_REDIS_PREFIX as the gateways have it).\n' +
        'Both commands work while the gateway runs.\n\nExamples:\n' +
        '  threadline deliveries list --failed\n  threadline deliveries list --chat 12345 --json\n' +
        '  threadline deliveries retry <id>\n  threadline deliveries retry --all-failed\n',
    );

  deliveries
    .command('list')
    .description('list deliveries, newest first')
    .option('--failed', 'only failed deliveries (dead letters)')
    .option('--chat <id>', 'only deliveries to this chat id (exact match)', parseChatId)
    .option('--json', 'print a JSON array instead of text')
    .option('--limit <n>', `at most this many (1 to ${MAX_LIMIT})`, parseLimit, DEFAULT_LIMIT)
    .addOption(dataDirOption())
    .action(async (options: ListOptions) => {
      const records = await withOutbox(options.dataDir, io, (outbox) =>
        outbox.list({
          limit: options.limit,
          ...(options.failed ? { failedOnly: true } : {}),
          ...(options.chat === undefined ? {} : { chatId: options.chat }),
        }),
      );
      io.out(options.json ? toJson(records) : toText(records, options.limit));
    });

  deliveries
    .command('retry')
    .description('queue failed deliveries to be sent again: one by id, or all with --all-failed')
    .argument('[id]', 'id of the failed delivery')
    .option('--all-failed', 'every failed delivery instead of one')
    .addOption(dataDirOption())
    .action(async (id: string | undefined, options: RetryOptions, command: Command) => {
      if ((id === undefined) === (options.allFailed === undefined)) {
        command.error('error: give either a delivery id or --all-failed', { exitCode: 2, code: 'threadline.usage' });
      }
      const queued = await withOutbox(options.dataDir, io, (outbox) => outbox.retryFailed(id));
      if (id === undefined) {
        io.out(`queued ${queued} ${queued === 1 ? 'delivery' : 'deliveries'} for retry; the running gateway sends them within a second\n`);
      } else if (queued === 0) {
        fail(io, `no failed delivery ${printable(id)} (see: threadline deliveries list --failed)`);
      } else {
        io.out(`queued 1 delivery for retry: ${printable(id)}; the running gateway sends it within a second\n`);
      }
    });
}

export function dataDirOption(): Option {
  return new Option('--data-dir <dir>', "the gateway's data directory (default: THREADLINE_DATA_DIR, else ./data)");
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > MAX_LIMIT) {
    throw new InvalidArgumentError(`Give a whole number from 1 to ${MAX_LIMIT}.`);
  }
  return limit;
}

function parseChatId(value: string): string {
  if (value === '') throw new InvalidArgumentError('Give a chat id.');
  return value;
}

function toText(records: readonly DeliveryRecord[], limit: number): string {
  const idWidth = Math.max(0, ...records.map((record) => printable(record.id).length));
  const targetWidth = Math.max(0, ...records.map((record) => formatDestination(record.destination).length));
  const blocks = records.map((record) => {
    const when = [`created ${iso(record.createdAt)}`];
    if (record.finishedAt !== undefined) when.push(`finished ${iso(record.finishedAt)}`);
    else if (record.status === 'pending') when.push(`due ${iso(record.dueAt)}`);
    else if (record.leaseUntil !== undefined) when.push(`lease until ${iso(record.leaseUntil)}`);
    const lines = [
      `${printable(record.id).padEnd(idWidth)}  ${record.status.padEnd(7)}  ${record.kind.padEnd(12)}  ` +
        `${formatDestination(record.destination).padEnd(targetWidth)}  attempts ${record.attempts}`,
      `  ${when.join('  ')}`,
    ];
    if (record.lastError !== undefined) lines.push(`  error: ${shown(record.lastError)}`);
    lines.push(`  text:  ${shown(record.text)}`);
    return lines.join('\n');
  });
  const count = `${records.length} ${records.length === 1 ? 'delivery' : 'deliveries'}, newest first`;
  const more = records.length === limit ? ` (limit ${limit} reached; pass --limit for more)` : '';
  return [...blocks, count + more].join('\n') + '\n';
}

/** The records without their origin routing, which names the user and chat of the work. */
function toJson(records: readonly DeliveryRecord[]): string {
  const rows = records.map((record) => {
    const text = head(record.text);
    const traceId = record.origin.origin?.traceId;
    return {
      id: record.id,
      status: record.status,
      kind: record.kind,
      destination: {
        platform: record.destination.platform,
        chatId: record.destination.chatId,
        ...(record.destination.threadId === undefined ? {} : { threadId: record.destination.threadId }),
      },
      target: formatDestination(record.destination),
      text,
      ...(text.length < record.text.length ? { textTruncated: true } : {}),
      ...(record.inReplyTo === undefined ? {} : { inReplyTo: record.inReplyTo }),
      attempts: record.attempts,
      createdAt: iso(record.createdAt),
      attemptsSince: iso(record.attemptsSince),
      dueAt: iso(record.dueAt),
      ...(record.leaseUntil === undefined ? {} : { leaseUntil: iso(record.leaseUntil) }),
      ...(record.finishedAt === undefined ? {} : { finishedAt: iso(record.finishedAt) }),
      ...(record.lastError === undefined ? {} : { lastError: record.lastError }),
      ...(typeof traceId === 'string' ? { originTraceId: traceId } : {}),
    };
  });
  // JSON leaves C1 controls and bidi overrides raw; escaped, a terminal shows them inertly.
  return JSON.stringify(rows, null, 2).replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, escapeChar) + '\n';
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The first SHOWN_CHARS characters, never splitting a surrogate pair. */
function head(text: string): string {
  let end = 0;
  let count = 0;
  for (const char of text) {
    if (count++ === SHOWN_CHARS) return text.slice(0, end);
    end += char.length;
  }
  return text;
}

function shown(text: string): string {
  const cut = head(text);
  return printable(cut) + (cut.length < text.length ? '…' : '');
}
