/**
 * `threadline trace --chat <id>`: the recent traces of one conversation, from Jaeger, Tempo or
 * the local trace file, each with its root span, its deliveries and where they went, and links.
 * Exit 0: shown (none found is no error); 2: a usage error or a trace store that could not be read.
 */
import { type Command } from 'commander';
import { summarizeTraces } from '../forensics/conversation-traces.js';
import { tracesJson, tracesText } from './render-traces.js';
import type { CliIo } from './io.js';
import { addSourceOptions, chatOption, idAsStamped, openSource, printWarnings, readingSource, serviceName, type SourceOptions } from './trace-sources.js';

export function registerTrace(program: Command, io: CliIo): void {
  const command = program.command('trace').description("list one conversation's recent traces: root span, deliveries and their destinations, links");
  addSourceOptions(command)
    .addOption(chatOption('the chat (the real id; hashed for hmac privacy)').makeOptionMandatory())
    .option('--thread <id>', 'only this thread of the chat')
    .addHelpText(
      'after',
      '\nExamples:\n  threadline trace --chat -1001234 --since 2h\n  threadline trace --chat C0123 --thread 1733.42 --jaeger http://localhost:16686\n',
    )
    .action(async (options: SourceOptions & { chat: string }, cmd: Command) => {
      const source = await openSource(options, io, cmd);
      const until = Date.now();
      const since = until - options.since;
      const chatId = idAsStamped(options.chat, io, cmd);
      const threadId = options.thread === undefined ? undefined : idAsStamped(options.thread, io, cmd);
      const traces = await readingSource(io, () =>
        source.search({
          service: serviceName(options, io),
          since,
          until,
          limit: options.limit,
          purpose: 'conversation',
          chatId,
          ...(threadId === undefined ? {} : { threadId }),
        }),
      );
      const summaries = summarizeTraces(traces);
      const scope = { source: source.description, since, until, traces: summaries.length };
      const link = (traceId: string) => source.link(traceId);
      io.out(options.json ? tracesJson(summaries, scope, link) : tracesText(summaries, scope, link, io.color === true));
      printWarnings(source, io);
    });
}
