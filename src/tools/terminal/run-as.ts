import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ConfigError } from '../../errors.js';

/** The account commands run as (THREADLINE_TERMINAL_USER), resolved once at start-up. */
export interface RunAs {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** Where its commands run: its home directory, or the temporary directory when it has none. */
  readonly cwd: string;
  readonly home: string;
}

/**
 * Resolves THREADLINE_TERMINAL_USER (a name or a uid) through the system's account database.
 * Refused unless the gateway runs as root (only root can become another user) or already as
 * that user: a command must never run with rights it was not meant to have.
 */
export function resolveRunAs(spec: string, currentUid: number | undefined = process.getuid?.()): RunAs {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/.test(spec)) throw new ConfigError('THREADLINE_TERMINAL_USER', `"${spec.slice(0, 40)}" is not a user name or uid`);
  let entry: string;
  try {
    entry = execFileSync('getent', ['passwd', spec], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0]!;
  } catch {
    throw new ConfigError('THREADLINE_TERMINAL_USER', `no account "${spec}" on this host (getent passwd found none)`);
  }
  const [name, , uid, gid, , home] = entry.split(':');
  const account = { name: name!, uid: Number(uid), gid: Number(gid), home: home ?? '/' };
  if (!Number.isSafeInteger(account.uid) || !Number.isSafeInteger(account.gid)) throw new ConfigError('THREADLINE_TERMINAL_USER', `the account "${spec}" has no numeric uid and gid`);
  if (account.uid === 0 || account.gid === 0) throw new ConfigError('THREADLINE_TERMINAL_USER', `names ${account.uid === 0 ? 'root' : 'an account of the root group'}: commands would read every secret of the gateway; name an unprivileged account`);
  if (currentUid !== 0 && currentUid !== account.uid) {
    throw new ConfigError('THREADLINE_TERMINAL_USER', `running commands as ${account.name} needs the gateway to run as root (it runs as uid ${currentUid}); or run the gateway as ${account.name} and leave this unset`);
  }
  return { ...account, cwd: isDirectory(account.home) ? account.home : tmpdir() };
}

/** `env` as the account's own shell would have it: HOME, USER and LOGNAME are its. */
export function runAsEnv(env: NodeJS.ProcessEnv, runAs: RunAs | undefined): NodeJS.ProcessEnv {
  return runAs === undefined ? env : { ...env, HOME: runAs.home, USER: runAs.name, LOGNAME: runAs.name };
}

/**
 * What a shell line puts before a command to run it as the account: setpriv, with the groups
 * cleared (numbers only, so nothing in it is read as shell).
 */
export function runAsPrefix(runAs: RunAs | undefined): string {
  // A gateway that runs as the account already has nothing to drop (and setpriv could not).
  return runAs === undefined || process.getuid?.() === runAs.uid ? '' : `setpriv --reuid=${runAs.uid} --regid=${runAs.gid} --clear-groups -- `;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
