import { existsSync, readFileSync } from 'node:fs';
import type { Clock } from '../clock.js';

const HAS_PROC = existsSync('/proc/self/stat');

/** How long a group gets between SIGTERM and SIGKILL: enough for a command to clean up and the wrapper to record its status. */
export const KILL_GRACE_MS = 3000;

/**
 * Sends `signal` to the process group `pgid`; false when the group is gone, or is not ours to
 * signal (EPERM: the id was reused by another user's process). Never throws: it runs from timers.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGTERM to the whole group now, SIGKILL to what is left of it after the grace; returns a
 * cancel for the second step (when the caller learns the group is gone, or stops).
 */
export function terminateGroup(pgid: number, clock: Clock, graceMs = KILL_GRACE_MS): () => void {
  if (!signalGroup(pgid, 'SIGTERM')) return () => undefined;
  return clock.at(clock.now() + graceMs, () => signalGroup(pgid, 'SIGKILL'));
}

/**
 * True while the wrapper `pid` of the process whose directory is `dir` is running. A pid that
 * was reused by another program (after a reboot, say) does not count: its command line must
 * name the directory. A zombie (ended, not yet reaped by a container's init) does not count either.
 */
export function isWrapperAlive(pid: number, dir: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    // ESRCH, or EPERM: it exists but belongs to another user, so it is not ours.
    return false;
  }
  // No /proc (not Linux): the signal check is all there is.
  if (!HAS_PROC) return true;
  let stat: string;
  let cmdline: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return false;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X' && cmdline.split('\0').includes(dir);
}
