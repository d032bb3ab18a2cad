/**
 * Preloaded into a threadline server by bench/gateway-commits.ts (`--import`): counts the
 * store connection's commits and, for each, which operations it held, by wrapping
 * SqliteConnection's commit in the build the server runs (BENCH_THREADLINE_DIST). On SIGUSR2
 * it writes the counts so far to `commit-counts.json` in the data directory, synchronously,
 * so the bench reads them as they were when it asked.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

type Call = readonly [name: string, args: readonly unknown[]];
interface Counted {
  commit(): void;
}

const dist = resolve(process.env['BENCH_THREADLINE_DIST'] ?? 'dist');
const { SqliteConnection } = (await import(pathToFileURL(join(dist, 'store/sqlite-connection.js')).href)) as {
  SqliteConnection: { prototype: Counted };
};

let commits = 0;
let calls = 0;
/** Transactions by what they held: the sorted operation names of each, with their counts. */
const shapes = new Map<string, number>();
const original = SqliteConnection.prototype.commit;
SqliteConnection.prototype.commit = function (this: Counted & { queue: readonly Call[] }) {
  const batch = this.queue;
  if (batch.length > 0) {
    commits++;
    calls += batch.length;
    const shape = batch.map(([name]) => name).sort().join(' + ');
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  }
  return original.call(this);
};

let asked = 0;
process.on('SIGUSR2', () => {
  asked++;
  const path = join(process.env['THREADLINE_DATA_DIR']!, 'commit-counts.json');
  writeFileSync(path, JSON.stringify({ asked, commits, calls, shapes: Object.fromEntries(shapes) }));
});
