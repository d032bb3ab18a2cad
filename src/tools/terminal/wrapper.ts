import { ThreadlineError, messageOf } from '../../errors.js';
import { runDetached } from '../../session/index.js';
import { NOT_STARTED } from './process-files.js';
import type { SpawnedProcess, Spawner } from './spawner.js';

/** dash's `ulimit -f` counts 512-byte blocks (checked: `ulimit -f 2` stops a file at 1024 bytes). */
const ULIMIT_BLOCK_BYTES = 512;

/** The name the wrapper runs under ($0): it shows in `ps` and in /proc/<pid>/cmdline. */
export const WRAPPER_NAME = 'threadline-process';

/**
 * The wrapper of a background command: $1 its directory, $2 the output cap in blocks, $3 the
 * command. It waits for `run` on stdin (so a refused start runs nothing), runs the command with
 * its output appended to a capped file, and writes `$?` atomically once it has exited.
 */
const WRAPPER_SCRIPT = [
  // A handler, not '': an ignored TERM would be inherited by the command, which /kill must end.
  "trap 'terminated=1' TERM",
  // Ignored, and inherited on purpose: past the cap, writes fail with EFBIG instead of killing the command.
  "trap '' XFSZ",
  'IFS= read -r go',
  'if [ "$go" = abort ]; then exit 0; fi',
  // EOF: the gateway died before it could say run; the next start reports that.
  `if [ "$go" != run ]; then printf '%s\\n' ${NOT_STARTED} >"$1/status.tmp" && mv -f "$1/status.tmp" "$1/status"; exit 0; fi`,
  'ulimit -f "$2"',
  '/bin/sh -c "$3" </dev/null >>"$1/output" 2>&1',
  'rc=$?',
  `printf '%s\\n' "$rc" >"$1/status.tmp" && mv -f "$1/status.tmp" "$1/status"`,
].join('\n');

export interface WrapperOptions {
  readonly dir: string;
  readonly command: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly outputMaxBytes: number;
}

/** A wrapper spawned and waiting: `run()` lets the command start, `abort()` ends it unrun. */
export class HeldWrapper {
  constructor(
    /** The wrapper's pid, which is also its process group id (detached: its own session). */
    readonly pid: number,
    readonly child: SpawnedProcess,
  ) {}

  run(): void {
    this.child.stdin?.end('run\n');
  }

  abort(): void {
    this.child.stdin?.end('abort\n');
  }
}

/** A wrapper that died early makes the write fail with EPIPE: its exit is reported instead. */
function ignoreStdinError(): void {}

/**
 * Spawns the wrapper detached (own session and process group, stdio not tied to the gateway
 * once started), from the root context so its events never carry the caller's routing.
 * Throws TL_TOOL_FAILED when the shell cannot be started.
 */
export async function spawnWrapper(spawner: Spawner, options: WrapperOptions): Promise<HeldWrapper> {
  const blocks = Math.max(1, Math.floor(options.outputMaxBytes / ULIMIT_BLOCK_BYTES));
  const child = runDetached(() =>
    spawner('/bin/sh', ['-c', WRAPPER_SCRIPT, WRAPPER_NAME, options.dir, String(blocks), options.command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    }),
  );
  const pid = child.pid;
  if (pid === undefined) throw new ThreadlineError('TL_TOOL_FAILED', `Could not start /bin/sh in ${options.cwd}: ${messageOf(await spawnError(child))}`);
  // Module-level listener: a closure here would keep the options (the whole environment) alive as long as the child.
  child.stdin?.once('error', ignoreStdinError);
  child.unref();
  return new HeldWrapper(pid, child);
}

function spawnError(child: SpawnedProcess): Promise<unknown> {
  return new Promise((resolve) => child.once('error', resolve));
}
