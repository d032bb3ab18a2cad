import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../../errors.js';
import type { Tool } from '../tool.js';
import type { BackgroundWork, ToolServices } from '../tool-services.js';
import type { TerminalConfig } from '../tools-config.js';
import { killProcessTool, listProcessesTool } from './process-tools.js';
import { nodeSpawner, type Spawner } from './spawner.js';
import { terminalTool } from './terminal-tool.js';
import { TerminalWatchers } from './terminal-watchers.js';

export type { Spawner, SpawnedProcess } from './spawner.js';
export { TerminalWatchers, ADOPTED_SWEEP_MS } from './terminal-watchers.js';

export interface TerminalOptions {
  /** Starts processes; a bench injects a fake. Default: node:child_process spawn. */
  readonly spawner?: Spawner;
  /** Where commands run. Default: the data directory. */
  readonly cwd?: string;
}

export interface Terminal {
  /** `terminal`, `list_processes`, `kill_process`: admin only, TL_TOOL_DISABLED unless THREADLINE_TERMINAL=1. */
  readonly tools: Tool[];
  /** Reports background commands' ends and progress; start() adopts what an earlier gateway left running. */
  readonly watchers: BackgroundWork & TerminalWatchers;
}

/** The terminal tools and the watchers of their background commands. */
export function createTerminal(given: ToolServices, config: TerminalConfig, options: TerminalOptions = {}): Terminal {
  // Absolute: the wrapper runs in `cwd`, where a relative process directory (`./data`, the default) would not exist.
  const services: ToolServices = { ...given, dataDir: resolve(given.dataDir) };
  if (config.runAs !== undefined) requirePrivateDataDir(services.dataDir, config.runAs.name);
  const watchers = new TerminalWatchers(services, config);
  const spawner = options.spawner ?? nodeSpawner;
  // Another account's commands run in its home: the data directory is the gateway's alone.
  const cwd = options.cwd ?? config.runAs?.cwd ?? services.dataDir;
  return {
    tools: [terminalTool({ services, config, watchers, spawner, cwd }), listProcessesTool(services, config), killProcessTool(services, config, watchers)],
    watchers,
  };
}

/**
 * Commands run as another account must not read the store (every chat's history) or write
 * skills and process files: the data directory is refused unless only its owner may enter it.
 */
function requirePrivateDataDir(dataDir: string, account: string): void {
  let mode: number;
  try {
    mode = statSync(dataDir).mode & 0o777;
  } catch {
    return; // Made 0700 by the data dir lock before anything reads it.
  }
  if ((mode & 0o077) !== 0) {
    throw new ConfigError(
      'THREADLINE_TERMINAL_USER',
      `the data directory ${dataDir} is open to others (mode ${mode.toString(8)}), so commands run as ${account} could read every chat: chmod 700 it`,
    );
  }
}
