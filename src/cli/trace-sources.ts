/**
 * What `threadline misroutes` and `threadline trace` share: where the traces come from
 * (--jaeger, --tempo or the local trace file), the time window, and a chat id turned into what
 * the spans carry (its pseudonym in hmac privacy).
 */
import { CommanderError, InvalidArgumentError, Option, type Command } from 'commander';
import { readInteger, readText } from '../config/read-setting.js';
import { ThreadlineError, messageOf } from '../errors.js';
import type { TraceSource } from '../forensics/trace-source.js';
import { pseudonymize } from '../telemetry/session-attributes.js';
import { readSpanAttributeOptions } from '../telemetry/telemetry-config.js';
import type { CliIo } from './io.js';
import { printable } from '../text/printable.js';

export interface SourceOptions {
  readonly jaeger?: string;
  readonly tempo?: string;
  readonly file?: string;
  readonly service?: string;
  readonly since: number;
  readonly limit: number;
  readonly chat?: string;
  readonly thread?: string;
  readonly json?: true;
}

const DEFAULT_LIMIT = 1_000;
const MAX_LIMIT = 100_000;

/** Adds the source, window, chat and output options. */
export function addSourceOptions(command: Command): Command {
  return command
    .option('--jaeger <url>', 'read from Jaeger (its query service, e.g. http://localhost:16686)')
    .option('--tempo <url>', 'read from Grafana Tempo (its HTTP API, e.g. http://localhost:3200)')
    .option('--file <path>', 'read the local trace file and its rotated files (default: THREADLINE_TRACE_FILE, else <data dir>/traces.jsonl)')
    .option('--service <name>', 'service.name of the gateway (default: OTEL_SERVICE_NAME, else threadline)')
    .option('--since <duration>', 'how far back to look: 90s, 30m, 1h, 2d', parseDuration, 3_600_000)
    .option('--limit <n>', `at most this many traces per search (1 to ${MAX_LIMIT})`, parseLimit, DEFAULT_LIMIT)
    .option('--json', 'print JSON instead of text');
}

/** A duration like 90s, 30m, 1h or 2d, in ms. */
export function parseDuration(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value.trim());
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  if (match === null || Number(match[1]) === 0) throw new InvalidArgumentError('Give a duration such as 90s, 30m, 1h or 2d.');
  return Number(match[1]) * unit[match[2] as keyof typeof unit];
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > MAX_LIMIT) throw new InvalidArgumentError(`Give a whole number from 1 to ${MAX_LIMIT}.`);
  return limit;
}

/** The one source the options name (the local trace file when none); a usage error for two. */
export async function openSource(options: SourceOptions, io: CliIo, command: Command): Promise<TraceSource> {
  const given = (['jaeger', 'tempo', 'file'] as const).filter((name) => options[name] !== undefined);
  if (given.length > 1) usage(command, `give one of --jaeger, --tempo and --file, not ${given.map((name) => `--${name}`).join(' and ')}`);
  if (options.jaeger !== undefined) {
    const { JaegerSource } = await import('../forensics/jaeger-source.js');
    return new JaegerSource(checkedUrl(options.jaeger, '--jaeger', command));
  }
  if (options.tempo !== undefined) {
    const { TempoSource } = await import('../forensics/tempo-source.js');
    return new TempoSource(checkedUrl(options.tempo, '--tempo', command));
  }
  const { TraceFileSource } = await import('../forensics/trace-file-source.js');
  // The exporter writes no line longer than its file cap: a longer one is not a batch of it.
  return new TraceFileSource(options.file ?? readText(io.env, 'THREADLINE_TRACE_FILE'), { maxLineBytes: setting(() => readInteger(io.env, 'THREADLINE_TRACE_FILE_MAX_BYTES'), command) });
}

/** A setting the command reads as the gateway does; a bad value is a usage error. */
function setting<T>(read: () => T, command: Command): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ThreadlineError) usage(command, `${error.message} [${error.code}]`);
    throw error;
  }
}

function checkedUrl(value: string, flag: string, command: Command): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return usage(command, `${flag} takes an http:// or https:// URL, not ${JSON.stringify(value.slice(0, 80))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') usage(command, `${flag} takes an http:// or https:// URL`);
  return value;
}

/** The service name the gateway stamps its spans with. */
export function serviceName(options: SourceOptions, io: CliIo): string {
  return options.service ?? readText(io.env, 'OTEL_SERVICE_NAME');
}

/**
 * An id as the spans carry it under the gateway's span privacy (THREADLINE_SPAN_PRIVACY and
 * THREADLINE_SPAN_HMAC_KEY, read as the gateway reads them): itself, or its pseudonym.
 * In `off` privacy spans carry no ids, so searching by one is a usage error.
 */
export function idAsStamped(id: string, io: CliIo, command: Command): string {
  let privacy;
  try {
    privacy = readSpanAttributeOptions(io.env);
  } catch (error) {
    if (error instanceof ThreadlineError) usage(command, `${error.message} [${error.code}]`);
    throw error;
  }
  if (privacy.privacy === 'off') usage(command, 'THREADLINE_SPAN_PRIVACY is off: spans carry no chat or thread ids to search by');
  return privacy.privacy === 'hmac' ? pseudonymize(id, privacy.hmacKey!) : id;
}

/** Exit 2 with one line: a usage error. */
export function usage(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: 2, code: 'threadline.usage' });
}

/**
 * Runs a command's work so that anything but its own exit (a trace store or a store that
 * could not be read, or a failure of ours) is one line and exit 2: exit 1 means "found".
 */
export async function readingSource<T>(io: CliIo, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CommanderError) throw error;
    const message = error instanceof ThreadlineError ? `${error.message} [${error.code}]` : `failed: ${messageOf(error)}`;
    io.err(`threadline: ${printable(message)}\n`);
    throw new CommanderError(2, 'threadline.source', message);
  }
}

/** What the source skipped, on stderr, so a reader knows the answer may be partial. */
export function printWarnings(source: TraceSource, io: CliIo): void {
  for (const warning of source.warnings?.() ?? []) io.err(`threadline: ${warning}\n`);
}

/** Option for the chat to look at. */
export function chatOption(description: string): Option {
  return new Option('--chat <id>', description).argParser((value: string) => {
    if (value === '') throw new InvalidArgumentError('Give a chat id.');
    return value;
  });
}
