import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { PID_FILE } from '../../src/store/data-dir-lock.js';
import { until } from '../helpers/gateway.js';
import { collectOutput, isolatedEnv } from '../helpers/gateway-process.js';

/**
 * The real `npm start`, signalled the ways a supervisor or a terminal does. npm forwards
 * SIGTERM and SIGINT to the script's process and waits for it; whatever runs the script must
 * pass them on to the gateway, or the gateway is left running, orphaned and listening.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function npmEnv(vars: Record<string, string>): Record<string, string> {
  return isolatedEnv({ npm_config_update_notifier: 'false', npm_config_fund: 'false', ...vars });
}

/** True while `pid` runs; a zombie (exited, not yet reaped) counts as gone. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = `/proc/${pid}/stat`;
  return !existsSync(stat) || readFileSync(stat, 'utf8').split(') ')[1]?.[0] !== 'Z';
}

/** Whether something accepts connections on the loopback `port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface NpmStart {
  readonly npm: ChildProcess;
  readonly gatewayPid: number;
  readonly port: number;
  readonly output: () => string;
  /** npm's exit: its code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` in its own process group (as a terminal's foreground job), once its banner is out. */
async function npmStart(): Promise<NpmStart> {
  const dataDir = mkdtempSync(join(tmpdir(), 'threadline-npm-start-'));
  // dist/ is built before the run (test/build-dist.ts), as `prestart` would: --ignore-scripts skips it.
  const npm = spawn('npm', ['start', '--ignore-scripts'], {
    cwd: ROOT,
    env: npmEnv({ THREADLINE_DATA_DIR: dataDir, THREADLINE_LOG_LEVEL: 'warn' }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const { output } = collectOutput(npm);
  let gatewayPid: number | undefined;
  cleanups.push(() => {
    // Whatever a failed run left behind, the orphaned gateway included.
    for (const pid of [gatewayPid, npm.pid]) if (pid !== undefined && running(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  await until(() => /threadline ready · listening on/.test(output()) || npm.exitCode !== null || npm.signalCode !== null, 30_000);
  const url = /threadline ready · listening on (http:\/\/\S+)/.exec(output())?.[1];
  if (url === undefined) throw new Error(`npm start did not start the gateway:\n${output()}`);
  gatewayPid = Number(readFileSync(join(dataDir, PID_FILE), 'utf8'));
  expect(gatewayPid).not.toBe(npm.pid);
  return { npm, gatewayPid, port: Number(new URL(url).port), output, exited };
}

/** Signals npm (or, as Ctrl-C in a terminal does, its whole process group) and waits for npm to exit. */
async function signalAndWait(started: NpmStart, signal: NodeJS.Signals, target: 'npm' | 'group') {
  const { npm, exited } = started;
  process.kill(target === 'group' ? -npm.pid! : npm.pid!, signal);
  const timeout = new Promise<never>((_resolve, reject) =>
    setTimeout(() => reject(new Error(`npm did not exit after ${signal}:\n${started.output()}`)), 20_000).unref(),
  );
  return Promise.race([exited, timeout]);
}

describe('npm start', () => {
  it.each([
    ['SIGTERM to npm (a supervisor stopping it)', 'SIGTERM', 'npm'],
    ['SIGINT to npm', 'SIGINT', 'npm'],
    ['SIGINT to its process group (Ctrl-C in a terminal)', 'SIGINT', 'group'],
  ] as const)('stops the gateway on %s: npm exits 0 after it, and the port is closed', async (_name, signal, target) => {
    const started = await npmStart();
    expect(await listening(started.port)).toBe(true);

    const exit = await signalAndWait(started, signal, target);
    // npm waited for a clean stop: the gateway's own exit code, no signal.
    expect(exit, started.output()).toEqual({ code: 0, signal: null });
    expect(running(started.gatewayPid)).toBe(false);
    expect(await listening(started.port)).toBe(false);
  });
});
