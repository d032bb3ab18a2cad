import { ThreadlineError, messageOf } from '../../errors.js';
import { runDetached } from '../../session/index.js';
import { NOT_STARTED } from './process-files.js';
import { runAsPrefix, type RunAs } from './run-as.js';
import type { SpawnedProcess, Spawner } from './spawner.js';

/** The name the wrapper runs under ($0): it shows in `ps` and in /proc/<pid>/cmdline. */
export const WRAPPER_NAME = 'threadline-process';

/** Where the command's own `$?` is left for the wrapper: a pipeline's status is its last command's. */
const EXIT_FILE = 'exit';

/**
 * Appends the first $2 bytes of stdin to "$1/output" as they come, reads the rest to the end
 * (so the writer never meets a closed pipe) and then says how much it dropped. POSIX dd writes
 * each read as it returns and copies at most count × bs bytes (a short read counts as a block),
 * so whole blocks are copied while $2 leaves room for one, the remainder byte by byte, and the
 * file's size says how far it got. (head -c buffers its output, so the file would lag behind.)
 */
const KEEP_FIRST_BYTES = [
  '{',
  // Outlives /kill's TERM (as do dd and wc, which inherit it): a command that cleans up on TERM still has its words kept, not a SIGPIPE.
  "  trap '' TERM",
  '  start=$(( $(wc -c <"$1/output") ))',
  '  left=$2',
  '  more=1',
  '  while [ "$more" ] && [ "$left" -ge 4096 ]; do',
  '    dd bs=4096 count=$(( left / 4096 )) 2>/dev/null',
  '    now=$(( $(wc -c <"$1/output") - start ))',
  // Nothing copied: dd met the end of the output.
  '    if [ "$now" -eq $(( $2 - left )) ]; then more=; fi',
  '    left=$(( $2 - now ))',
  '  done',
  '  if [ "$more" ] && [ "$left" -gt 0 ]; then dd bs=1 count="$left" 2>/dev/null; fi',
  // $(( )): some wc pad the count with blanks.
  '  dropped=$(( $(wc -c) ))',
  `  if [ "$dropped" -gt 0 ]; then printf '\\n[threadline: output cut at %s bytes; %s more bytes discarded]\\n' "$2" "$dropped"; fi`,
  '} >>"$1/output"',
].join('\n');

/**
 * The wrapper of a background command: $1 its directory, $2 the output cap in bytes, $3 the
 * command. It waits for `run` on stdin (so a refused start runs nothing), runs the command with
 * its output (stdout and stderr) piped to KEEP_FIRST_BYTES, and writes the command's `$?`
 * atomically once both have ended. Only the captured output is capped: the files the command
 * writes are not.
 */
const wrapperScript = (runAs: RunAs | undefined): string => [
  // A handler, not '': an ignored TERM would be inherited by the command, which /kill must end.
  "trap 'terminated=1' TERM",
  'IFS= read -r go',
  'if [ "$go" = abort ]; then exit 0; fi',
  // EOF: the gateway died before it could say run; the next start reports that.
  `if [ "$go" != run ]; then printf '%s\\n' ${NOT_STARTED} >"$1/status.tmp" && mv -f "$1/status.tmp" "$1/status"; exit 0; fi`,
  // The pipeline's left side is a subshell, where a caught trap is reset: it sets its own, to outlive /kill's TERM and record the command's end.
  `{ trap 'terminated=1' TERM; ${runAsPrefix(runAs)}/bin/sh -c "$3" </dev/null 2>&1; printf '%s\\n' "$?" >"$1/${EXIT_FILE}"; } | ${KEEP_FIRST_BYTES}`,
  // No exit file, or an empty one: the left side was killed before it wrote it (SIGKILL); said as unreadable, never as 0.
  `rc=$(cat "$1/${EXIT_FILE}" 2>/dev/null)`,
  '[ -n "$rc" ] || rc=unknown',
  `printf '%s\\n' "$rc" >"$1/status.tmp" && mv -f "$1/status.tmp" "$1/status"`,
].join('\n');

export interface WrapperOptions {
  readonly dir: string;
  readonly command: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly outputMaxBytes: number;
  /** The account the command runs as; the wrapper stays the gateway's, to write the process directory. */
  readonly runAs?: RunAs | undefined;
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
  const child = runDetached(() =>
    spawner('/bin/sh', ['-c', wrapperScript(options.runAs), WRAPPER_NAME, options.dir, String(Math.max(1, Math.floor(options.outputMaxBytes))), options.command], {
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
