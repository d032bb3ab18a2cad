import { ThreadlineError, messageOf } from '../../errors.js';
import type { Clock } from '../clock.js';
import { BoundedTail } from './bounded-tail.js';
import { formatDuration, outputSection } from './notification-text.js';
import { KILL_GRACE_MS, signalGroup, terminateGroup } from './process-group.js';
import type { RunAs } from './run-as.js';
import type { Spawner } from './spawner.js';

export interface ForegroundOptions {
  readonly command: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  readonly tailChars: number;
  readonly signal: AbortSignal;
  readonly clock: Clock;
  readonly spawner: Spawner;
  /** The account it runs as (THREADLINE_TERMINAL_USER); undefined: the gateway's. */
  readonly runAs?: RunAs | undefined;
}

export interface ForegroundResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Why it was killed, when it was. */
  readonly stoppedBy?: 'timeout' | 'abort' | undefined;
  readonly tail: string;
  readonly droppedChars: number;
  readonly runMs: number;
}

/**
 * Runs `/bin/sh -c command` in its own process group with stdout and stderr kept as one bounded
 * tail. After `timeoutMs`, or when `signal` aborts, the whole group gets SIGTERM, then SIGKILL
 * after a grace, so children it left (`sleep 1000 &`) end too. Resolves once the output has
 * closed; throws TL_TOOL_FAILED when the shell cannot be started.
 */
export async function runForeground(options: ForegroundOptions): Promise<ForegroundResult> {
  const startedAt = options.clock.now();
  const child = options.spawner('/bin/sh', ['-c', options.command], {
    cwd: options.cwd,
    env: options.env,
    // As the account, unless the gateway runs as it already (then there is nothing to drop).
    ...(options.runAs === undefined || process.getuid?.() === options.runAs.uid ? {} : { uid: options.runAs.uid, gid: options.runAs.gid }),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail = new BoundedTail(options.tailChars);
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => tail.append(chunk));
  }
  let stoppedBy: ForegroundResult['stoppedBy'];
  let cancelKill = (): void => undefined;
  const stop = (reason: 'timeout' | 'abort'): void => {
    if (stoppedBy !== undefined || child.pid === undefined) return;
    stoppedBy = reason;
    cancelKill = terminateGroup(child.pid, options.clock, KILL_GRACE_MS);
  };
  const cancelTimeout = options.clock.at(startedAt + options.timeoutMs, () => stop('timeout'));
  const onAbort = (): void => stop('abort');
  options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.signal.aborted) onAbort();
  try {
    const { code, signal } = await closed(child);
    return { code, signal, stoppedBy, tail: tail.tail, droppedChars: tail.dropped, runMs: options.clock.now() - startedAt };
  } catch (error) {
    throw new ThreadlineError('TL_TOOL_FAILED', `Could not run the command in ${options.cwd}: ${messageOf(error)}`, { cause: error });
  } finally {
    cancelTimeout();
    cancelKill();
    options.signal.removeEventListener('abort', onAbort);
    // The shell is gone; what it left behind in its group is killed only when it was stopped.
    if (stoppedBy !== undefined && child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
  }
}

/** Resolves when the process has exited and its output streams have closed. */
function closed(child: ReturnType<Spawner>): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal }));
  });
}

/** What the caller of a foreground command is told. */
export function foregroundText(result: ForegroundResult, timeoutMs: number): string {
  const how =
    result.stoppedBy === 'timeout'
      ? `timed out after ${formatDuration(timeoutMs)}: its process group was killed`
      : result.stoppedBy === 'abort'
        ? 'stopped: its process group was killed'
        : result.code !== null
          ? `exit ${result.code}`
          : `ended by ${result.signal ?? 'an unknown signal'}`;
  return `${how} (${formatDuration(result.runMs)})\n${outputSection(result.tail, result.droppedChars)}`;
}
