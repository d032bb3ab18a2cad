import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';
import type { BackgroundCaps, CappedAdd } from './store.js';

/**
 * An INSERT of a row into `table` (its `columns` named as parameters) unless its destination's
 * or the table's count is at its cap, in the caller's transaction.
 */
export function cappedInsert<Row extends { destination: string }>(db: Database.Database, table: string, columns: string) {
  const statement = preparer(db);
  const counts = {
    mine: statement<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE destination = ?`),
    total: statement<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`),
  };
  const insert = statement(`INSERT INTO ${table} (${columns}) VALUES (${columns.split(', ').map((column) => `@${column}`).join(', ')}) ON CONFLICT (id) DO NOTHING`);
  return (row: Row, caps: BackgroundCaps): CappedAdd => {
    const mine = counts.mine.get(row.destination)!.n;
    if (mine >= caps.maxPerDestination) return { status: 'full', scope: 'destination', open: mine };
    // Caps are small and nothing is added past them: counting the table costs that many entries at most.
    const total = counts.total.get()!.n;
    if (total >= caps.maxTotal) return { status: 'full', scope: 'total', open: total };
    return insert.run(row).changes === 1 ? { status: 'added' } : { status: 'taken' };
  };
}
