/**
 * `threadline misroutes`: the deliveries that went, or were about to go, to another
 * conversation than the work that produced them, and the work that was due and never
 * delivered, from Jaeger, Tempo or the local trace file (and the store, for lost work).
 * Exit 0: none found; 1: some found; 2: a usage error or a trace store that could not be read.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CommanderError, Option, type Command } from 'commander';
import { readText } from '../config/read-setting.js';
import { STORE_FILE } from '../store/store-file.js';
import type { Finding, LostWork } from '../forensics/findings.js';
import { findMisroutes } from '../forensics/find-misroutes.js';
import { findLostInTraces } from '../forensics/lost-in-traces.js';
import { findingsJson, findingsText } from './render-findings.js';
import type { CliIo } from './io.js';
import {
  addSourceOptions,
  chatOption,
  idAsStamped,
  openSource,
  parseDuration,
  printWarnings,
  readingSource,
  serviceName,
  usage,
  type SourceOptions,
} from './trace-sources.js';

interface MisroutesOptions extends SourceOptions {
  readonly lostAfter: number;
  readonly dataDir?: string;
  /** commander's --no-store: false when given. */
  readonly store: boolean;
}

/** Findings shown at most; the count says when there were more. */
const MAX_LOST = 1_000;

export function registerMisroutes(program: Command, io: CliIo): void {
  const command = program
    .command('misroutes')
    .description('find deliveries that went to another chat or thread than their work, and work due but never delivered');
  addSourceOptions(command)
    .addOption(chatOption('only problems whose origin or destination is this chat (the real id; hashed for hmac privacy)'))
    .option('--thread <id>', 'with --chat: only this thread')
    .option('--lost-after <duration>', 'work not delivered this long after it was due counts as lost', parseDuration, 600_000)
    .addOption(new Option('--data-dir <dir>', "also look for lost work in the gateway's store there (default: THREADLINE_DATA_DIR, else ./data, when it holds one)"))
    .option('--no-store', 'do not look in the store')
    .addHelpText(
      'after',
      '\nExit status: 0 nothing found, 1 problems found, 2 usage or trace store error.\n\nExamples:\n' +
        '  threadline misroutes                          # the local trace file, last hour\n' +
        '  threadline misroutes --jaeger http://localhost:16686 --since 6h\n' +
        '  threadline misroutes --tempo http://localhost:3200 --chat -1001234 --json\n',
    )
    .action(async (options: MisroutesOptions, cmd: Command) => {
      if (options.thread !== undefined && options.chat === undefined) usage(cmd, '--thread needs --chat');
      const source = await openSource(options, io, cmd);
      const until = Date.now();
      const since = until - options.since;
      const chatId = options.chat === undefined ? undefined : idAsStamped(options.chat, io, cmd);
      const threadId = options.thread === undefined ? undefined : idAsStamped(options.thread, io, cmd);
      const filter = { ...(chatId === undefined ? {} : { chatId }), ...(threadId === undefined ? {} : { threadId }) };
      const storeDir = storeToRead(options, io, cmd);
      const findings = await readingSource(io, async () => {
        const traces = await source.search({ service: serviceName(options, io), since, until, limit: options.limit, purpose: 'deliveries', ...filter });
        if (traces.length >= options.limit) {
          io.err(`threadline: the search returned --limit ${options.limit} traces; older ones were not read (raise --limit or narrow --since)\n`);
        }
        const misroutes = await findMisroutes(traces, source, filter);
        const lostInTraces = findLostInTraces(traces, { now: until, lostAfterMs: options.lostAfter, ...filter });
        const lost = storeDir === undefined ? lostInTraces : await withStoreFindings(storeDir, options, until, lostInTraces);
        return { traces: traces.length, list: [...misroutes, ...lost] as Finding[] };
      });
      const scope = { source: source.description, since, until, traces: findings.traces, ...(storeDir === undefined ? {} : { store: storeDir }) };
      const link = (traceId: string) => source.link(traceId);
      io.out(options.json ? findingsJson(findings.list, scope, link) : findingsText(findings.list, scope, link, io.color === true));
      printWarnings(source, io);
      if (findings.list.length > 0) throw new CommanderError(1, 'threadline.found', `${findings.list.length} found`);
    });
}

/** The data dir whose store to read: the one given (which must hold a store), else the default one if it holds a store. */
function storeToRead(options: MisroutesOptions, io: CliIo, command: Command): string | undefined {
  if (!options.store) return undefined;
  const dir = resolve(options.dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'));
  if (existsSync(resolve(dir, STORE_FILE))) return dir;
  if (options.dataDir !== undefined) usage(command, `no store at ${resolve(dir, STORE_FILE)}: give the gateway's data dir, or --no-store`);
  return undefined;
}

/**
 * The lost work of the store beside that of the traces: work both report is shown once, as
 * the store has it (it knows the outcome), and a delivery the traces saw begun but the store
 * holds as sent (its send fell outside the traces read) is not lost.
 */
async function withStoreFindings(dataDir: string, options: MisroutesOptions, now: number, fromTraces: readonly LostWork[]): Promise<LostWork[]> {
  const { SqliteStore } = await import('../store/sqlite-store.js');
  const { findLostInStore } = await import('../forensics/lost-in-store.js');
  // Read-only: never a lock or a migration under a running gateway.
  const store = await SqliteStore.openReadOnly(resolve(dataDir, STORE_FILE));
  try {
    // The store holds real ids: the chat filter is the one given, not its pseudonym.
    const fromStore = await findLostInStore(store, {
      now,
      lostAfterMs: options.lostAfter,
      limit: MAX_LOST,
      ...(options.chat === undefined ? {} : { chatId: options.chat }),
      ...(options.thread === undefined ? {} : { threadId: options.thread }),
    });
    const reported = new Set(fromStore.map((work) => work.id));
    const states = await store.outbox.states(fromTraces.map((work) => work.id));
    const stillLost = fromTraces.filter((work) => !reported.has(work.id) && states.get(work.id) !== 'done');
    return [...fromStore, ...stillLost].sort((a, b) => b.dueAt - a.dueAt);
  } finally {
    await store.close();
  }
}
