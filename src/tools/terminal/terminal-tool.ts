import { mkdir } from 'node:fs/promises';
import { Type } from 'typebox';
import { ThreadlineError } from '../../errors.js';
import { captureRouting, requireSession } from '../../session/index.js';
import { commandEnv } from './command-env.js';
import { runAsEnv } from './run-as.js';
import { destinationOf } from '../../session/routing-mismatch.js';
import type { ProcessRecord } from '../../store/store.js';
import { shortIdOf } from '../call-key.js';
import { systemClock } from '../clock.js';
import type { Tool, ToolCall, ToolResult } from '../tool.js';
import { defineTool } from '../define-tool.js';
import type { ToolServices } from '../tool-services.js';
import type { TerminalConfig } from '../tools-config.js';
import { requireEnabled } from './require-enabled.js';
import { formatDuration } from './notification-text.js';
import { newProcessId } from './process-id.js';
import { processDir, removeProcessDir } from './process-files.js';
import { foregroundText, runForeground } from './run-foreground.js';
import type { Spawner } from './spawner.js';
import type { TerminalWatchers } from './terminal-watchers.js';
import { spawnWrapper } from './wrapper.js';

/** The longest check_interval that makes sense: a day. */
export const MAX_CHECK_INTERVAL_S = 86_400;

/** Longest command accepted, in characters: a script belongs in a file. */
const MAX_COMMAND_CHARS = 8192;

const parameters = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: MAX_COMMAND_CHARS, description: 'Run by /bin/sh -c on the gateway host.' }),
    background: Type.Optional(Type.Boolean({ description: 'Start it and answer at once with its id; it keeps running after this turn.' })),
    notify_on_complete: Type.Optional(Type.Boolean({ description: 'Background only: report its end (exit status, output tail) to this chat.' })),
    check_interval: Type.Optional(Type.Integer({ description: 'Background only: report progress (output tail) every this many seconds.' })),
  },
  { additionalProperties: false },
);

interface TerminalArgs {
  readonly command: string;
  readonly background?: boolean;
  readonly notify_on_complete?: boolean;
  readonly check_interval?: number;
}

export interface TerminalToolDeps {
  readonly services: ToolServices;
  readonly config: TerminalConfig;
  readonly watchers: TerminalWatchers;
  readonly spawner: Spawner;
  readonly cwd: string;
}

/** The `terminal` tool: a shell command in the foreground (bounded, timed out) or in the background (watched). */
export function terminalTool(deps: TerminalToolDeps): Tool {
  return defineTool({
    name: 'terminal',
    description:
      'Runs a shell command on the gateway host. Foreground: waits for it (killed after the timeout) and returns its exit status and output tail. ' +
      'background: true starts it and returns its id; notify_on_complete reports its end here, check_interval reports progress.',
    input: parameters,
    adminOnly: true,
    enabled: deps.config.enabled,
    // A foreground command has no id to be found by: a replayed turn is answered with what it said.
    recordsResult: true,
    async run(raw, call) {
      requireEnabled(deps.config);
      const args = raw as unknown as TerminalArgs;
      // spawn() would throw a TypeError for it, foreground and background alike.
      if (args.command.includes('\0')) throw new ThreadlineError('TL_TOOL_INPUT', 'The command holds a NUL character, which no shell command can contain; remove it');
      if (args.background === true) return startBackground(deps, args, call);
      if (args.notify_on_complete !== undefined || args.check_interval !== undefined) {
        throw new ThreadlineError('TL_TOOL_INPUT', 'notify_on_complete and check_interval apply to a background command: set background: true');
      }
      return runInForeground(deps, args.command, call);
    },
  });
}

async function runInForeground(deps: TerminalToolDeps, command: string, call: ToolCall): Promise<ToolResult> {
  const result = await runForeground({
    command,
    cwd: deps.cwd,
    env: runAsEnv(commandEnv(process.env, deps.config.passedEnv, deps.services.commandSettings), deps.config.runAs),
    runAs: deps.config.runAs,
    timeoutMs: deps.config.timeoutMs,
    tailChars: deps.config.tailChars,
    signal: call.signal,
    // Real time: a timeout and its kill protect the host, and a test's manual clock must not hold them back.
    clock: systemClock,
    spawner: deps.spawner,
  });
  return { text: foregroundText(result, deps.config.timeoutMs) };
}

async function startBackground(deps: TerminalToolDeps, args: TerminalArgs, call: ToolCall): Promise<ToolResult> {
  const { services, config } = deps;
  const checkIntervalMs = checkInterval(args.check_interval, config);
  // The routing of this execute_tool span: the watcher's context and the link of its notifications.
  const origin = captureRouting();
  const destination = destinationOf(requireSession());
  const keyed = call.idempotencyKey === undefined ? undefined : shortIdOf('p', call.idempotencyKey);
  const existing = keyed === undefined ? undefined : await services.store.processes.get(keyed);
  // This call ran before its turn was cut short: the command was started then, not again now.
  if (existing !== undefined && existing.command === args.command && existing.origin.session.sessionId === origin.session.sessionId) {
    return { text: startedText(existing) };
  }
  const id = keyed !== undefined && existing === undefined ? keyed : await unusedId(services);
  const dir = processDir(services.dataDir, id);
  await mkdir(dir, { recursive: true });
  let wrapper;
  try {
    wrapper = await spawnWrapper(deps.spawner, { dir, command: args.command, cwd: deps.cwd, env: runAsEnv(commandEnv(process.env, config.passedEnv, services.commandSettings), config.runAs), runAs: config.runAs, outputMaxBytes: config.outputMaxBytes });
  } catch (error) {
    await removeProcessDir(dir);
    throw error;
  }
  const record: ProcessRecord = {
    id,
    origin,
    destination,
    command: args.command,
    pid: wrapper.pid,
    startedAt: services.clock.now(),
    notifyOnComplete: args.notify_on_complete === true,
    ...(checkIntervalMs === undefined ? {} : { checkIntervalMs }),
    progressSent: 0,
    ...(services.instance === undefined ? {} : { instance: services.instance }),
  };
  let added;
  try {
    added = await services.store.processes.add(record, { maxPerDestination: config.maxPerChat, maxTotal: config.maxTotal });
  } catch (error) {
    wrapper.abort();
    await removeProcessDir(dir);
    throw error;
  }
  if (added.status === 'taken') {
    // The process directory reserves the id first, so only a record left without its directory gets here.
    wrapper.abort();
    await removeProcessDir(dir);
    throw new ThreadlineError('TL_TOOL_FAILED', `Background command id ${id} is taken; try again`);
  }
  if (added.status === 'full') {
    // The wrapper still waits for its go: nothing of the command ran.
    wrapper.abort();
    await removeProcessDir(dir);
    throw new ThreadlineError(
      'TL_TOOL_LIMIT',
      added.scope === 'destination'
        ? `This chat has ${added.open} background commands (THREADLINE_TERMINAL_MAX_PER_CHAT); end one with /kill <id> or wait for one to finish`
        : `The gateway has ${added.open} background commands (THREADLINE_TERMINAL_MAX_TOTAL); end one with /kill <id> or wait for one to finish`,
    );
  }
  // Listening before the go: even a command that ends at once is reported.
  deps.watchers.watchLive(record, wrapper.child);
  wrapper.run();
  return { text: startedText(record) };
}

/** What a started command is answered with: the same words when its turn runs again, so the reply is sent once. */
function startedText(record: ProcessRecord): string {
  const reports = [
    record.notifyOnComplete ? 'its end will be reported here' : '',
    record.checkIntervalMs === undefined ? '' : `progress every ${formatDuration(record.checkIntervalMs)}`,
  ].filter((part) => part !== '');
  return `Started ${record.id} (pid ${record.pid}) in the background${reports.length > 0 ? `; ${reports.join(', ')}` : ''}. /kill ${record.id} ends it.`;
}

/** check_interval in ms, or TL_TOOL_INPUT saying the allowed range. */
function checkInterval(seconds: number | undefined, config: TerminalConfig): number | undefined {
  if (seconds === undefined) return undefined;
  const minSeconds = Math.ceil(config.minCheckIntervalMs / 1000);
  if (seconds * 1000 < config.minCheckIntervalMs || seconds > MAX_CHECK_INTERVAL_S) {
    throw new ThreadlineError(
      'TL_TOOL_INPUT',
      `check_interval must be between ${minSeconds} and ${MAX_CHECK_INTERVAL_S} seconds (THREADLINE_TERMINAL_MIN_CHECK_INTERVAL_S sets the minimum); got ${seconds}`,
    );
  }
  return seconds * 1000;
}

async function unusedId(services: ToolServices): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const id = newProcessId();
    if ((await services.store.processes.get(id)) === undefined) return id;
  }
  throw new ThreadlineError('TL_TOOL_FAILED', 'Could not find an unused process id; try again');
}
