import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase, sqliteOperations } from '../../src/store/sqlite-operations.js';

/** Every statement sqliteOperations prepares that reads or writes the tools' tables. */
function toolStatements(db: Database.Database): string[] {
  const prepared: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => (prepared.push(sql), prepare(sql))) as typeof db.prepare;
  sqliteOperations(db, { doneMs: 1, failedMs: 1 });
  db.prepare = prepare;
  return prepared.filter((sql) => /\b(processes|schedules|history)\b/.test(sql));
}

/** The plan SQLite picks for `sql`, every parameter bound to a value. */
function planOf(db: Database.Database, sql: string): string[] {
  const named = [...new Set([...sql.matchAll(/@(\w+)/g)].map((match) => match[1]!))];
  const positional = (sql.match(/\?/g) ?? []).length;
  const explain = db.prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = named.length > 0 ? explain.all(Object.fromEntries(named.map((name) => [name, 1]))) : explain.all(...Array<number>(positional).fill(1));
  return rows.map((row) => row.detail);
}

describe('the tools\' tables', () => {
  it('are read through their indexes: no statement walks a table, bar listing or counting every process or schedule', () => {
    const db = openDatabase(':memory:');
    const statements = toolStatements(db);
    expect(statements.length).toBeGreaterThan(15);
    // Which every row by nature: all processes, all schedules, and the counts of the total caps (bounded by those caps).
    const walksByNature = [/FROM processes ORDER BY rowid$/, /FROM schedules ORDER BY next_at, id$/, /^SELECT COUNT\(\*\) AS n FROM (processes|schedules)$/];
    const walks = statements
      .filter((sql) => !walksByNature.some((pattern) => pattern.test(sql)))
      .flatMap((sql) => planOf(db, sql).filter((detail) => /^SCAN (processes|schedules|history)\b/.test(detail)).map((detail) => `${detail}: ${sql}`));
    expect(walks).toEqual([]);
    // The history and schedule reads use the indexes named for them.
    const plans = statements.map((sql) => planOf(db, sql).join(' | ')).join('\n');
    for (const index of ['history_session', 'history_mirrored', 'history_age', 'schedules_next', 'schedules_destination', 'processes_destination', 'processes_ended']) {
      expect(plans).toContain(index);
    }
    db.close();
  });
});
