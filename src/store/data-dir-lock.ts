import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ThreadlineError, messageOf } from '../errors.js';

/** Held through SQLite's OS-level file lock. Never open it any other way in this process: closing any fd on it drops the lock. */
export const LOCK_FILE = 'threadline.lock';
/** The holder's pid, in a plain file: the locked database cannot be read by the one refused. */
export const PID_FILE = 'threadline.pid';

/** One gateway's hold on its data directory, until `release()` or the process ends. */
export interface DataDirLock {
  /** The data directory, as an absolute path. */
  readonly dataDir: string;
  /** Removes the pid file if it still names this process, then drops the lock; idempotent. */
  release(): void;
}

/**
 * Takes the data directory (creating it if needed) for this gateway alone, before anything
 * else touches the store. The lock is an exclusive transaction held open on `threadline.lock`
 * in rollback-journal mode, so the OS releases it when the process dies, even on kill -9, and
 * SQLite refuses a second connection from this same process too. TL_DATA_DIR_LOCKED names
 * the holder's pid when another gateway has it; TL_STORE_FAILED says why the lock could not
 * be taken otherwise.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const dir = resolve(dataDir);
  const pidPath = join(dir, PID_FILE);
  let db: Database.Database | undefined;
  try {
    // Only the gateway's account may read it: it holds every chat's messages.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // timeout 0: a held lock fails at once with SQLITE_BUSY instead of waiting for it.
    db = new Database(join(dir, LOCK_FILE), { timeout: 0 });
    db.pragma('journal_mode = DELETE');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    writeFileSync(pidPath, `${process.pid}\n`);
  } catch (error) {
    db?.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      const holder = readPid(pidPath);
      throw new ThreadlineError(
        'TL_DATA_DIR_LOCKED',
        `The data directory ${dir} is locked by another gateway (${holder === undefined ? 'pid unknown' : `pid ${holder}`}). ` +
          'Stop that gateway, or give this one another THREADLINE_DATA_DIR.',
        { cause: error },
      );
    }
    throw new ThreadlineError(
      'TL_STORE_FAILED',
      `Cannot lock the data directory ${dir}: ${messageOf(error)}. Check that THREADLINE_DATA_DIR is writable and has space.`,
      { cause: error },
    );
  }
  const held = db;
  return {
    dataDir: dir,
    release() {
      if (!held.open) return;
      // Still locked while the pid file goes, so a next holder's pid is never the one removed.
      try {
        if (readPid(pidPath) === process.pid) rmSync(pidPath, { force: true });
      } finally {
        held.close();
      }
    },
  };
}

/**
 * Whether a gateway holds the data directory's lock now: a read of the lock file, refused at
 * once (SQLITE_BUSY) while a holder's exclusive transaction is open. Takes no lock of its own.
 */
export function isDataDirLocked(dataDir: string): boolean {
  const path = join(resolve(dataDir), LOCK_FILE);
  if (!existsSync(path)) return false;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 0 });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return true;
    throw error;
  } finally {
    db?.close();
  }
}

function readPid(path: string): number | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}
