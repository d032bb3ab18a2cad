// A gateway's first life, in its own process for the kill -9 test: starts a background command
// through the terminal tool, prints the stored records as one JSON line, then waits to be killed.
import { pino } from 'pino';
import { withSession } from '../../../src/session/index.js';
import type { Store } from '../../../src/store/store.js';
import { installContext } from '../../../src/telemetry/install-context.js';
import { systemClock } from '../../../src/tools/clock.js';
import { createTerminal } from '../../../src/tools/terminal/index.js';
import { MemoryProcessTable } from './memory-process-table.js';
import { ORIGIN_SESSION, TEST_CONFIG } from './terminal-fixture-config.js';

installContext();
const [dataDir, command] = process.argv.slice(2) as [string, string];
const table = new MemoryProcessTable();
const terminal = createTerminal(
  {
    deliverer: { deliver: async () => undefined },
    store: { processes: table } as unknown as Store,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    dataDir,
    platforms: new Set(['telegram']),
  },
  TEST_CONFIG,
);
await terminal.watchers.start();
const tool = terminal.tools.find((candidate) => candidate.name === 'terminal')!;
// tool.run, not executeTool: its tracer's imports would double this process's start-up.
await withSession(ORIGIN_SESSION, () => tool.run({ command, background: true, notify_on_complete: true }, { signal: new AbortController().signal }));
process.stdout.write(`${JSON.stringify(await table.all())}\n`);
setInterval(() => undefined, 60_000);
