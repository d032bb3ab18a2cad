import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { until } from './gateway.js';

/** The repository root: the gateway process runs there, as `npm start` would. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What the banner says once the gateway listens; its first group is the base URL. */
const BANNER = /threadline ready · listening on (\S+)/;

/**
 * Spawns the gateway as `npm start` runs it (register, then cli/main, from the dist/ that
 * test/build-dist.ts builds before the run) in the repository root, with exactly `env`:
 * stdout piped, stderr piped or inherited. `nodeOptions` go before the bootstrap.
 */
export function spawnGateway(env: NodeJS.ProcessEnv, stderr: 'inherit' | 'pipe' = 'pipe', nodeOptions: readonly string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeOptions, '--import', './dist/telemetry/register.js', 'dist/cli/main.js'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', stderr],
  });
}

/** What a spawned gateway has written so far, and its exit. */
export interface GatewayOutput {
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** stdout and stderr together, in the order they arrived. */
  readonly output: () => string;
  /** Resolves with the exit code once the process has exited and its streams have closed. */
  readonly exited: Promise<number | null>;
}

/** Collects a spawned gateway's piped stdout and stderr from now on (a stream not piped stays empty). */
export function collectOutput(child: ChildProcess): GatewayOutput {
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { stdout: () => stdout, stderr: () => stderr, output: () => output, exited };
}

/**
 * The variables a gateway process needs and nothing of this one's environment beyond them
 * (PATH, HOME, TMPDIR), on an ephemeral loopback port, plus `vars`.
 */
export function isolatedEnv(vars: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '',
    TMPDIR: process.env['TMPDIR'] ?? '/tmp',
    PORT: '0',
    HOST: '127.0.0.1',
    ...vars,
  };
}

/** A gateway process run to its end: everything it wrote (stdout and stderr) and its exit code. */
export interface GatewayRun {
  readonly output: string;
  readonly code: number | null;
}

/**
 * Runs the gateway process with `env`, waits up to 30 s for its banner, hands its base URL to
 * `exercise` (with what it has written so far), then stops it with SIGTERM and waits for its
 * exit. Throws with its output if it never listened.
 */
export async function runGatewayProcess(
  env: NodeJS.ProcessEnv,
  exercise: (base: string, output: () => string) => Promise<void>,
): Promise<GatewayRun> {
  const child = spawnGateway(env);
  const { output, exited } = collectOutput(child);
  try {
    await until(() => BANNER.test(output()) || child.exitCode !== null, 30_000);
    const base = BANNER.exec(output())?.[1];
    if (base === undefined) throw new Error(`the gateway did not start:\n${output()}`);
    await exercise(base, output);
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
  }
  const code = await exited;
  return { output: output(), code };
}

/** A gateway process that printed its banner. */
export interface StartedGateway {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
}

/**
 * Spawns the gateway with this process's environment plus `env` (port 0, warnings and up
 * logged to the inherited stderr), waits for its banner, and hands `onCleanup` the SIGKILL
 * that ends it after the test.
 */
export async function startGatewayProcess(env: Record<string, string>, onCleanup: (cleanup: () => void) => void): Promise<StartedGateway> {
  const child = spawnGateway({ ...process.env, PORT: '0', THREADLINE_LOG_LEVEL: 'warn', ...env }, 'inherit');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  onCleanup(() => {
    child.kill('SIGKILL');
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /listening on (http:\/\/\S+)/.exec(line);
    if (match) return { child, url: match[1]!, exited };
  }
  throw new Error(`gateway exited before its banner (code ${await exited})`);
}
