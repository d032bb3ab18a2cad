/**
 * What a background command's watcher costs: 10,000 live watchers (a fake spawner, so no fork;
 * the processes table as JSON rows in memory), each with check_interval at the minimum, so
 * all of them tick together.
 *
 *   node --expose-gc --import tsx bench/watchers.ts
 *
 * Heap per watcher: the heap after GC with every watcher started, less the heap before, less
 * the table's rows and the fake wrappers (each weighed the same way on its own): what the
 * watchers add beyond the store and the child process. Loop lag: monitorEventLoopDelay
 * (1 ms resolution) while a ManualClock makes BENCH_ROUNDS (default 3) progress rounds fall
 * due, each one delivery per watcher (reading its output file's tail, a new trace per
 * delivery, to a counting deliverer). No tracer provider is registered: spans are not recorded.
 * BENCH_WATCHERS (default 10000) changes the count. Prints RESULT lines; exits by itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino } from 'pino';
import { withSession } from '../src/session/index.js';
import type { Store } from '../src/store/store.js';
import { installContext } from '../src/telemetry/install-context.js';
import { ManualClock } from '../src/tools/clock.js';
import { createTerminal } from '../src/tools/terminal/index.js';
import type { TerminalConfig } from '../src/tools/tools-config.js';
import { fakeSpawner, fakeWrappers } from './watchers/fake-wrapper.js';
import { JsonProcessTable } from './watchers/json-process-table.js';

const WATCHERS = Number(process.env['BENCH_WATCHERS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CHATS = 100;
const INTERVAL_S = 30;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

/** The heap in use after full collections. */
function settledHeap(): number {
  for (let pass = 0; pass < 3; pass++) gc!();
  return process.memoryUsage().heapUsed;
}

installContext();
const dataDir = mkdtempSync(join(tmpdir(), 'threadline-bench-watchers-'));
const clock = new ManualClock();
const table = new JsonProcessTable();
let delivered = 0;
const config: TerminalConfig = {
  enabled: true,
  timeoutMs: 60_000,
  tailChars: 3000,
  outputMaxBytes: 16 * 1024 * 1024,
  minCheckIntervalMs: INTERVAL_S * 1000,
  maxPerChat: WATCHERS,
  passedEnv: [],
  maxTotal: WATCHERS,
};
const terminal = createTerminal(
  {
    deliverer: {
      deliver: async () => {
        delivered++;
      },
    },
    store: { processes: table } as unknown as Store,
    clock,
    logger: pino({ level: 'silent' }),
    dataDir,
    platforms: new Set(['telegram']),
  },
  config,
  { spawner: fakeSpawner },
);
const tool = terminal.tools.find((candidate) => candidate.name === 'terminal')!;
await terminal.watchers.start();

// Warm-up: the code paths compiled, then forgotten, so the measure holds only the watchers.
const before = settledHeap();
for (let index = 0; index < WATCHERS; index++) {
  const session = { platform: 'telegram', chatType: 'group' as const, chatId: `-100${index % CHATS}`, threadId: String(index % 7), userId: `u-${index}` };
  await withSession(session, () => tool.run({ command: `make -C /srv/job-${index} build`, background: true, check_interval: INTERVAL_S }, { signal: new AbortController().signal }));
}
const withWatchers = settledHeap();
if (terminal.watchers.size !== WATCHERS) throw new Error(`expected ${WATCHERS} watchers, have ${terminal.watchers.size}`);

// The table's rows and the fake wrappers, each weighed apart.
const baseRows = settledHeap();
// Fresh strings of the same rows, in a map as the table keeps them.
const rowsCopy = new Map([...table.rows].map(([id, row]) => [`${id} `.trim(), JSON.stringify(JSON.parse(row))]));
const tableBytes = settledHeap() - baseRows;
const baseFakes = settledHeap();
const fakes = fakeWrappers(WATCHERS);
const fakeBytes = settledHeap() - baseFakes;

const totalPerWatcher = (withWatchers - before) / WATCHERS;
const watcherBytes = totalPerWatcher - tableBytes / WATCHERS - fakeBytes / WATCHERS;

const lag = monitorEventLoopDelay({ resolution: 1 });
lag.enable();
const tickStart = performance.now();
for (let round = 0; round < ROUNDS; round++) await clock.advance(INTERVAL_S * 1000);
const tickMs = performance.now() - tickStart;
lag.disable();
if (delivered !== WATCHERS * ROUNDS) throw new Error(`expected ${WATCHERS * ROUNDS} progress deliveries, got ${delivered}`);

await terminal.watchers.stop();
rmSync(dataDir, { recursive: true, force: true });

const kib = (bytes: number): string => (bytes / 1024).toFixed(2);
console.log(`watchers                 ${WATCHERS} (${CHATS} chats), check_interval ${INTERVAL_S}s, ${ROUNDS} rounds`);
console.log(`heap per watcher, total  ${kib(totalPerWatcher)} KiB (table row ${kib(tableBytes / WATCHERS)} KiB, fake wrapper ${kib(fakeBytes / WATCHERS)} KiB)`);
console.log(`progress deliveries      ${delivered} in ${tickMs.toFixed(0)} ms (${((delivered / tickMs) * 1000).toFixed(0)}/s)`);
console.log(`loop lag                 p50 ${(lag.percentile(50) / 1e6).toFixed(2)} ms, p99 ${(lag.percentile(99) / 1e6).toFixed(2)} ms, max ${(lag.max / 1e6).toFixed(2)} ms`);
console.log(`RESULT watcher_kib=${kib(watcherBytes)}`);
console.log(`RESULT watcher_loop_lag_p99_ms=${(lag.percentile(99) / 1e6).toFixed(2)}`);
// Kept alive until here, so the weighing above measured them.
void rowsCopy.size;
void fakes.length;
