import { Type } from 'typebox';
import { ThreadlineError } from '../../errors.js';
import { formatDestination } from '../../session/delivery.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import { requireSession } from '../../session/index.js';
import type { ProcessRecord } from '../../store/store.js';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import type { ToolServices } from '../tool-services.js';
import type { TerminalConfig } from '../tools-config.js';
import { formatDuration, quoteCommand } from './notification-text.js';
import { requireEnabled } from './require-enabled.js';
import type { TerminalWatchers } from './terminal-watchers.js';

/** `list_processes`: the background commands of this chat and thread. */
export function listProcessesTool(services: ToolServices, config: TerminalConfig): Tool {
  return defineTool({
    name: 'list_processes',
    description: 'Lists the background commands started in this chat and thread: id, pid, state, age and command.',
    input: Type.Object({}, { additionalProperties: false }),
    adminOnly: true,
    enabled: config.enabled,
    async run() {
      requireEnabled(config);
      const records = await services.store.processes.ofDestination(destinationOf(requireSession()));
      if (records.length === 0) return { text: 'No background commands in this chat.' };
      const now = services.clock.now();
      return { text: records.map((record) => describe(record, now)).join('\n') };
    },
  });
}

function describe(record: ProcessRecord, now: number): string {
  const state = record.exit === undefined ? 'running' : 'ended, reporting';
  return `${record.id} pid ${record.pid} ${state} ${formatDuration(now - record.startedAt)}: ${quoteCommand(record.command)}`;
}

/** `kill_process`: ends a background command of this chat and thread (its whole process group). */
export function killProcessTool(services: ToolServices, config: TerminalConfig, watchers: TerminalWatchers): Tool {
  return defineTool({
    name: 'kill_process',
    description: 'Ends a background command started in this chat (SIGTERM to its process group, SIGKILL after a grace).',
    input: Type.Object({ id: Type.String({ minLength: 1, maxLength: 32, description: 'The id list_processes shows.' }) }, { additionalProperties: false }),
    adminOnly: true,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    enabled: config.enabled,
    async run(args) {
      requireEnabled(config);
      const id = args['id'] as string;
      const record = await services.store.processes.get(id);
      // Another chat's command is as unknown here as one that never was.
      if (record === undefined || formatDestination(record.destination) !== formatDestination(destinationOf(requireSession()))) {
        throw new ThreadlineError('TL_TOOL_INPUT', `no process ${id.slice(0, 32)} in this chat (list_processes, or /jobs, shows them)`);
      }
      if (record.exit !== undefined) return { text: `${id} has already ended; its report is on its way.` };
      // Its pid is a process of another host: signalling it here would hit a stranger.
      if (!watchers.runsHere(record)) {
        throw new ThreadlineError('TL_TOOL_INPUT', `${id} runs on gateway instance ${record.instance ?? '?'}, which alone can end it; ask there or wait for it`);
      }
      await watchers.kill(record);
      return { text: `Killing ${id} (${quoteCommand(record.command)}): SIGTERM to its process group now, SIGKILL in a few seconds if it lingers.` };
    },
  });
}
