/**
 * The servers the gateway bench compares, each started as a process of its own on 127.0.0.1
 * with a data directory of its own, and stopped as a supervisor would (SIGTERM).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const root = new URL('../..', import.meta.url).pathname;

export interface ServerSpec {
  readonly name: string;
  readonly label: string;
  /** Node's arguments after any the caller adds (script and its flags). */
  readonly args: readonly string[];
  /** Environment on top of this process's; DATA_DIR_VARIABLE gets the server's data dir. */
  readonly env: Readonly<Record<string, string>>;
  readonly dataDirVariable: string;
}

export interface RunningServer {
  readonly spec: ServerSpec;
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly dataDir: string;
}

/** The threadline build a server runs: `dist` by default, another build to compare side by side. */
export function threadline(dist: string): string[] {
  const dir = resolve(root, dist);
  return ['--import', join(dir, 'telemetry/register.js'), join(dir, 'cli/main.js')];
}

export interface ServerOptions {
  readonly deliveryUrl: string;
  readonly dist: string;
  /** Another threadline build (its dist directory) to run side by side, telemetry off and on. */
  readonly baselineDist?: string | undefined;
}

export function benchServers(options: ServerOptions): ServerSpec[] {
  const common = {
    THREADLINE_WEBHOOK_DELIVERY_URL: options.deliveryUrl,
    THREADLINE_LOG_LEVEL: 'warn',
    // The saturation runs pile up messages faster than turns finish; none may be refused.
    THREADLINE_QUEUE_CAPACITY: '100000',
    PORT: '0',
    HOST: '127.0.0.1',
  };
  const tsx = (script: string) => ['--import', 'tsx', script];
  const pair = (dist: string, suffix: string, what: string): ServerSpec[] => [
    { name: `off${suffix}`, label: `threadline${what}, telemetry off`, args: threadline(dist), env: { ...common, OTEL_SDK_DISABLED: 'true' }, dataDirVariable: 'THREADLINE_DATA_DIR' },
    // As `npm start` has it: no collector configured, so spans go to the trace file in the data dir.
    { name: `on${suffix}`, label: `threadline${what}, telemetry on (trace file)`, args: threadline(dist), env: common, dataDirVariable: 'THREADLINE_DATA_DIR' },
  ];
  return [
    { name: 'bare', label: 'bare forwarder', args: tsx('bench/gateway/bare-forwarder.ts'), env: { DELIVERY_URL: options.deliveryUrl }, dataDirVariable: 'DATA_DIR' },
    { name: 'durable', label: 'hand-written durable forwarder', args: tsx('bench/gateway/durable-forwarder.ts'), env: { DELIVERY_URL: options.deliveryUrl }, dataDirVariable: 'DATA_DIR' },
    ...pair(options.dist, '', ''),
    ...(options.baselineDist === undefined ? [] : pair(options.baselineDist, '_baseline', ' (baseline build)')),
  ];
}

/** Servers still running; killed if the bench ends early, so none outlives it holding its port. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
process.once('SIGTERM', () => process.exit(143));

export async function startServer(spec: ServerSpec, nodeArgs: readonly string[] = [], env: Readonly<Record<string, string>> = {}): Promise<RunningServer> {
  const dataDir = mkdtempSync(join(tmpdir(), `bench-${spec.name}-`));
  const child = spawn(process.execPath, [...nodeArgs, ...spec.args], {
    cwd: root,
    env: { ...process.env, ...spec.env, ...env, [spec.dataDirVariable]: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /listening on (http:\/\/\S+)/.exec(line);
    if (match) {
      child.stdout!.resume();
      return { spec, url: match[1]!, pid: child.pid!, child, dataDir };
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  throw new Error(`${spec.label} (${spec.args.join(' ')}) exited before listening`);
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`; removes its data dir. */
export async function stopServer(server: RunningServer, graceMs = 20_000): Promise<void> {
  const { child } = server;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
  rmSync(server.dataDir, { recursive: true, force: true });
}
