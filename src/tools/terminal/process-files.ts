import { constants as osConstants } from 'node:os';
import { open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProcessExit } from '../../store/store.js';

/** What the wrapper writes as its status when the gateway never told it to run the command. */
export const NOT_STARTED = 'not-started';

/** Where a background command's files live: `<dataDir>/processes/<id>/`. */
export function processDir(dataDir: string, id: string): string {
  return join(dataDir, 'processes', id);
}

/** The command's stdout and stderr, appended by the wrapper. */
export const outputFile = (dir: string): string => join(dir, 'output');
/** Written (tmp, then mv) by the wrapper once the command has exited: its `$?`. */
export const statusFile = (dir: string): string => join(dir, 'status');
/** Present when /kill ended it: the notification says so, even after a restart. */
export const killedFile = (dir: string): string => join(dir, 'killed');

/**
 * How the command ended, from the wrapper's status file; undefined while there is none.
 * `$?` above 128 is a signal's (the shell's convention): 143 reads as SIGTERM.
 */
export async function readStatus(dir: string): Promise<ProcessExit | undefined> {
  let text: string;
  let endedAt: number;
  try {
    [text, endedAt] = await Promise.all([readFile(statusFile(dir), 'utf8'), stat(statusFile(dir)).then((info) => info.mtimeMs)]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const status = text.trim();
  if (status === NOT_STARTED) return { endedAt, note: 'never started: the gateway stopped before it could begin' };
  const code = Number(status);
  if (!Number.isInteger(code)) return { endedAt, note: `exit status unreadable (${JSON.stringify(status.slice(0, 20))})` };
  const signal = code > 128 ? signalName(code - 128) : undefined;
  return signal === undefined ? { code, endedAt } : { signal, endedAt };
}

function signalName(number: number): string | undefined {
  return Object.entries(osConstants.signals).find(([, value]) => value === number)?.[0];
}

export async function markKilled(dir: string): Promise<void> {
  await writeFile(killedFile(dir), '');
}

export async function wasKilled(dir: string): Promise<boolean> {
  return exists(killedFile(dir));
}

export async function removeProcessDir(dir: string): Promise<void> {
  // A killed command's wrapper may still write its status as the directory goes (ENOTEMPTY): tried again.
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
}

/** The output's last `chars` characters, read by position (never the whole file), and its size in bytes. */
export async function readOutputTail(dir: string, chars: number): Promise<{ tail: string; bytes: number }> {
  let handle;
  try {
    handle = await open(outputFile(dir), 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { tail: '', bytes: 0 };
    throw error;
  }
  try {
    const { size } = await handle.stat();
    // A UTF-8 character is at most 4 bytes: this many always hold `chars` characters.
    const length = Math.min(size, chars * 4);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    // A cut through a character decodes as U+FFFD at the start: drop it.
    const text = buffer.toString('utf8').replace(/^\uFFFD+/, '');
    return { tail: text.length > chars ? text.slice(-chars) : text, bytes: size };
  } finally {
    await handle.close();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
