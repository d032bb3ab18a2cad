import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';
import { createSchema, requireSchemaVersion } from './sqlite-schema.js';

/** How long a writer waits for another connection's write (the CLI's, say) before failing. */
const BUSY_TIMEOUT_MS = 5_000;

/** Prepares statements of `db` typed by the row they return: what each table's operations are made of. */
export function preparer(db: Database.Database): <Row = unknown>(sql: string) => Database.Statement<unknown[], Row> {
  return (sql) => db.prepare(sql);
}

/** Opens the database file in WAL mode with synchronous=NORMAL and creates the schema. */
export function openDatabase(path: string): Database.Database {
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    createSchema(db);
    return db;
  } catch (error) {
    throw new ThreadlineError(
      'TL_STORE_FAILED',
      `Cannot open the store at ${path}: ${messageOf(error)}. Check that THREADLINE_DATA_DIR is writable and has space.`,
      { cause: error },
    );
  }
}

/** A database opened read-only, and what to undo when it is closed. */
export interface ReadOnlyDatabase {
  readonly db: Database.Database;
  /** Closes the database and removes the private copy it may have been read from. */
  readonly close: () => void;
}

/**
 * Opens an existing store for reading only: no schema is created or moved, and SQLite refuses
 * every write. In WAL mode this reader never blocks the gateway's writer, nor it this reader.
 * A store in a directory this user cannot write, closed cleanly (no -shm file to read the WAL
 * through), cannot be opened in place: it is read from a private copy, which is consistent
 * because no gateway can be writing in a directory where it cannot make its WAL.
 * TL_STORE_FAILED says why it cannot be read.
 */
export function openReadOnlyDatabase(path: string): ReadOnlyDatabase {
  try {
    return readInPlace(path);
  } catch (error) {
    if (error instanceof ThreadlineError) throw error;
    if ((error as { code?: unknown } | null)?.code !== 'SQLITE_READONLY_DIRECTORY') throw cannotRead(path, error);
  }
  return readFromCopy(path);
}

function readInPlace(path: string, name = path): ReadOnlyDatabase {
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    requireSchemaVersion(db, name);
  } catch (error) {
    db.close();
    throw error;
  }
  return { db, close: () => db.close() };
}

/** Reads a copy of the file and of its WAL, made in a private directory removed on close. */
function readFromCopy(path: string): ReadOnlyDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-store-'));
  try {
    const copy = join(dir, basename(path));
    copyFileSync(path, copy);
    if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
    const { db } = readInPlace(copy, path);
    return {
      db,
      close: () => {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error instanceof ThreadlineError ? error : cannotRead(path, error);
  }
}

function cannotRead(path: string, error: unknown): ThreadlineError {
  return new ThreadlineError(
    'TL_STORE_FAILED',
    `Cannot read the store at ${path}: ${messageOf(error)}. Check that it is the gateway's threadline.db and that this user can read it.`,
    { cause: error },
  );
}
