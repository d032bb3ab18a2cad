import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ThreadlineError, messageOf } from '../errors.js';

/** Names the store of the gateway that last started on the data dir: `sqlite` or `redis`. */
export const BACKEND_FILE = 'threadline.backend';

export type BackendKind = 'sqlite' | 'redis';

/**
 * Written by a gateway once it holds the data dir's lock: a command that finds the dir locked
 * can then tell whether that gateway reads the dir's SQLite store at all (a store file left from
 * before a move to Redis is read by nobody).
 */
export function recordBackend(dataDir: string, kind: BackendKind): void {
  const path = join(dataDir, BACKEND_FILE);
  try {
    writeFileSync(path, `${kind}\n`);
  } catch (error) {
    throw new ThreadlineError('TL_STORE_FAILED', `Cannot write ${path}: ${messageOf(error)}. Check that THREADLINE_DATA_DIR is writable and has space.`, { cause: error });
  }
}

/** What the last gateway on `dataDir` recorded; undefined when none did (an older one) or the file is unreadable. */
export function readBackend(dataDir: string): BackendKind | undefined {
  try {
    const kind = readFileSync(join(dataDir, BACKEND_FILE), 'utf8').trim();
    return kind === 'sqlite' || kind === 'redis' ? kind : undefined;
  } catch {
    return undefined;
  }
}
