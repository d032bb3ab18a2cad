import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll } from 'vitest';
import { withSession, type SessionInput } from '../../../src/session/index.js';
import type { ProcessTable, Store } from '../../../src/store/store.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { systemClock, type Clock } from '../../../src/tools/clock.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import { createTerminal, type Spawner, type Terminal } from '../../../src/tools/terminal/index.js';
import type { InstanceLiveness, ToolServices } from '../../../src/tools/tool-services.js';
import type { ToolResult } from '../../../src/tools/tool.js';
import type { TerminalConfig } from '../../../src/tools/tools-config.js';
import { MemoryProcessTable } from './memory-process-table.js';
import { ORIGIN_SESSION, OTHER_SESSION, TEST_CONFIG } from './terminal-fixture-config.js';
import { RecordingDeliverer } from './recording-deliverer.js';

export { TEST_CONFIG, ORIGIN_SESSION, OTHER_SESSION };

/** Fresh data directories for a test file, removed after it. */
export function useDataDirs(): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), 'threadline-terminal-'));
    made.push(dir);
    return dir;
  };
}

export interface TerminalHarness {
  readonly terminal: Terminal;
  readonly services: ToolServices;
  readonly deliverer: RecordingDeliverer;
  readonly table: ProcessTable;
  /** Calls a terminal tool as the gateway would: inside `session`, through executeTool (its span is the origin). */
  call(name: string, args: Record<string, unknown>, options?: { session?: SessionInput; signal?: AbortSignal }): Promise<ToolResult>;
}

/** A terminal on `dataDir` and `table` (shared across a "restart"), with a recording deliverer. */
export function terminalHarness(options: {
  dataDir: string;
  table?: ProcessTable;
  deliverer?: RecordingDeliverer;
  clock?: Clock;
  config?: Partial<TerminalConfig>;
  spawner?: Spawner;
  /** The gateway instance id (distributed mode); default none, as embedded. */
  instance?: string;
  /** The other instances' heartbeats, as Redis would tell them; with `instance`, lost instances' commands are swept. */
  instances?: InstanceLiveness;
}): TerminalHarness {
  const table = options.table ?? new MemoryProcessTable();
  const deliverer = options.deliverer ?? new RecordingDeliverer();
  const services: ToolServices = {
    deliverer,
    store: { processes: table } as unknown as Store,
    clock: options.clock ?? systemClock,
    logger: pino({ level: 'silent' }),
    dataDir: options.dataDir,
    platforms: new Set(['telegram', 'slack']),
    ...(options.instance === undefined ? {} : { instance: options.instance }),
    ...(options.instances === undefined ? {} : { instances: options.instances }),
  };
  const terminal = createTerminal(services, { ...TEST_CONFIG, ...options.config }, options.spawner === undefined ? {} : { spawner: options.spawner });
  return {
    terminal,
    services,
    deliverer,
    table,
    call(name, args, callOptions = {}) {
      const tool = terminal.tools.find((candidate) => candidate.name === name);
      if (tool === undefined) throw new Error(`no tool ${name}`);
      return withSession(callOptions.session ?? ORIGIN_SESSION, () =>
        executeTool(tool, args, { signal: callOptions.signal ?? new AbortController().signal, authorize: async () => true }),
      );
    },
  };
}

/** The real store's processes table in `dataDir` (threadline.db), closed after the test file: what a restart reopens. */
export function useSqliteProcesses(): (dataDir: string) => Promise<ProcessTable> {
  const opened: SqliteStore[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  return async (dataDir) => {
    const store = await SqliteStore.open(join(dataDir, 'threadline.db'));
    opened.push(store);
    return store.processes;
  };
}

/** The id in a background start's answer ("Started p1a2b3 ..."). */
export function startedId(result: ToolResult): string {
  const match = /^Started (p[0-9a-z]{5}) /.exec(result.text);
  if (match === null) throw new Error(`not a start: ${result.text}`);
  return match[1]!;
}
