import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CommanderError } from 'commander';
import { readText } from '../config/read-setting.js';
import { ThreadlineError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { CliIo } from './io.js';

/** Opens the existing store (never creates one), runs `use`, closes it; failures exit 1. */
export async function withStore<T>(dataDir: string | undefined, io: CliIo, use: (store: Store) => Promise<T>): Promise<T> {
  const path = resolve(dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'), 'threadline.db');
  if (!existsSync(path)) {
    fail(io, `No store at ${path}: pass --data-dir or set THREADLINE_DATA_DIR to the gateway's data directory [TL_STORE_FAILED]`);
  }
  // Loaded here, so `start` loads nothing of the store before the telemetry bootstrap.
  const { SqliteStore } = await import('../store/sqlite-store.js');
  let store: Store;
  try {
    store = await SqliteStore.open(path);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  }
  try {
    return await use(store);
  } catch (error) {
    if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
    throw error;
  } finally {
    await store.close();
  }
}

/** Exit 1 with one line; command.error() would also suggest --help, which cannot help here. */
export function fail(io: CliIo, message: string): never {
  io.err(`threadline: ${message}\n`);
  throw new CommanderError(1, 'threadline.failed', message);
}
