import { pino } from 'pino';
import { afterEach } from 'vitest';
import { withSession, type SessionInput } from '../../../src/session/index.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';
import { ManualClock } from '../../../src/tools/clock.js';
import { createScheduler } from '../../../src/tools/cron/index.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import type { Tool, ToolResult } from '../../../src/tools/tool.js';
import type { BackgroundWork, ToolServices } from '../../../src/tools/tool-services.js';
import type { CronConfig } from '../../../src/tools/tools-config.js';
import { FULL_SESSION } from '../../helpers/sessions.js';
import { useTempDir } from '../../helpers/temp-dir.js';
import { FlakyScheduleTable } from './flaky-schedule-table.js';
import { RecordingDeliverer } from './recording-deliverer.js';

/** Monday 5 January 2026, 12:00:00 UTC: a whole minute, so cron runs fall on round times. */
export const START = Date.UTC(2026, 0, 5, 12, 0, 0);

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [key: string]: unknown;
}

export interface CronHarness {
  readonly clock: ManualClock;
  readonly deliverer: RecordingDeliverer;
  /** The store's schedules (SQLite), made to fail at will. */
  readonly schedules: FlakyScheduleTable;
  readonly services: ToolServices;
  readonly config: CronConfig;
  readonly logs: LogLine[];
  scheduler: BackgroundWork;
  tools: Map<string, Tool>;
  /** Calls a tool as the gateway does (execute_tool span, admin allowed) inside `session`. */
  call(name: string, args: Record<string, unknown>, session?: SessionInput): Promise<ToolResult>;
  /** As after a restart: the store closed and reopened, a new scheduler and tools on it (not started). */
  restart(): Promise<void>;
  /** Log lines at warn (40) or above. */
  warnings(): LogLine[];
}

export interface HarnessOptions {
  readonly maxPerChat?: number;
  readonly maxPerUser?: number;
  readonly maxTotal?: number;
  readonly adminReserve?: number;
  readonly platforms?: readonly string[];
}

/**
 * For a test file: a factory of cron harnesses, each over a manual clock, a recording
 * deliverer and a SQLite store of its own; after each test their schedulers stop and their
 * stores close.
 */
export function useCronHarness(): (options?: HarnessOptions) => Promise<CronHarness> {
  const tempDir = useTempDir('cron');
  const cleanups: (() => Promise<void>)[] = [];
  let opened = 0;
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return async (options = {}) => {
    const path = `${tempDir()}/schedules-${opened++}.db`;
    let sqlite = await SqliteStore.open(path);
    const clock = new ManualClock(START);
    const platforms = new Set(options.platforms ?? ['telegram', 'slack', 'webhook']);
    const deliverer = new RecordingDeliverer(clock, platforms);
    const schedules = new FlakyScheduleTable(sqlite.schedules);
    const logs: LogLine[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) });
    // The cron code uses the schedules table alone.
    const store = { schedules } as unknown as Store;
    const services: ToolServices = { deliverer, store, clock, logger, dataDir: tempDir(), platforms };
    const config: CronConfig = {
      maxPerChat: options.maxPerChat ?? 50,
      maxPerUser: options.maxPerUser ?? 50,
      maxTotal: options.maxTotal ?? 100_000,
      adminReserve: options.adminReserve ?? 0,
    };
    const build = (): { scheduler: BackgroundWork; tools: Map<string, Tool> } => {
      const built = createScheduler(services, config);
      return { scheduler: built.scheduler, tools: new Map(built.tools.map((tool) => [tool.name, tool])) };
    };
    const harness: CronHarness = {
      clock,
      deliverer,
      schedules,
      services,
      config,
      logs,
      ...build(),
      call(name, args, session = FULL_SESSION) {
        const tool = harness.tools.get(name);
        if (tool === undefined) throw new Error(`no tool ${name}`);
        return withSession(session, () => executeTool(tool, args, { signal: new AbortController().signal, authorize: async () => true }));
      },
      async restart() {
        await harness.scheduler.stop();
        await sqlite.close();
        sqlite = await SqliteStore.open(path);
        schedules.inner = sqlite.schedules;
        Object.assign(harness, build());
      },
      warnings: () => logs.filter((line) => line.level >= 40),
    };
    cleanups.push(async () => {
      await harness.scheduler.stop();
      await sqlite.close();
    });
    return harness;
  };
}

/** The id a tool's answer names (`c` and 5 base-36 characters). */
export function idIn(result: ToolResult): string {
  const match = /\bc[0-9a-z]{5}\b/.exec(result.text);
  if (match === null) throw new Error(`no schedule id in "${result.text}"`);
  return match[0];
}
