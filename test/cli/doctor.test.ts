import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { context } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import type { DoctorOptions } from '../../src/cli/doctor.js';
import { runThreadline } from '../../src/cli/threadline.js';
import { acquireDataDirLock, PID_FILE } from '../../src/store/data-dir-lock.js';
import { installContext } from '../../src/telemetry/index.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('doctor');

async function doctor(env: NodeJS.ProcessEnv, options: { color?: boolean; doctor?: DoctorOptions } = {}) {
  let out = '';
  let err = '';
  const io = { out: (text: string) => void (out += text), err: (text: string) => void (err += text), env, ...(options.color ? { color: true } : {}) };
  const code = await runThreadline(['doctor'], io, options.doctor);
  return { code, out, err, lines: out.trimEnd().split('\n') };
}

function dataDir(): string {
  return mkdtempSync(join(tempRoot(), 'data-'));
}

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = await listening();
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const servers: Server[] = [];
async function listening(): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const portOf = (server: Server) => (server.address() as { port: number }).port;
const failed = (lines: string[]) => lines.filter((line) => line.startsWith('✗'));

describe('threadline doctor', () => {
  it('passes every check on a usable setup, one line each, and leaves nothing behind', async () => {
    const dir = join(dataDir(), 'not-yet');
    const { code, lines, err } = await doctor({ THREADLINE_DATA_DIR: dir });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(lines).toEqual([
      '✓ configuration valid',
      `✓ data dir ${dir} is writable (can be created)`,
      '✓ data dir not locked (it does not exist yet)',
      `✓ store ${join(dir, 'threadline.db')} does not exist yet; a new store opens`,
      expect.stringMatching(/^✓ traces to file .*traces\.jsonl: trace file directory .* is writable/),
      '✓ metrics to none: nothing to check',
      '✓ context manager active: session routing survives an await and a timer',
    ]);
    expect(existsSync(dir)).toBe(false);
  });

  it('opens an existing store under the lock, and releases the lock', async () => {
    const dir = dataDir();
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dir, OTEL_TRACES_EXPORTER: 'none' });
    expect(failed(lines)).toEqual([]);
    expect(code).toBe(0);
    expect(lines).toContain('✓ data dir not locked by a running gateway');
    // Released: the gateway could take it now.
    acquireDataDirLock(dir).release();
    expect(existsSync(join(dir, PID_FILE))).toBe(false);
  });

  it('fails on a data dir a running gateway holds, naming its pid', async () => {
    const dir = dataDir();
    const lock = acquireDataDirLock(dir);
    try {
      const { code, lines, err } = await doctor({ THREADLINE_DATA_DIR: dir, OTEL_TRACES_EXPORTER: 'none' });
      expect(code).toBe(1);
      expect(failed(lines)).toEqual([expect.stringMatching(new RegExp(`^✗ data dir not locked: .*locked by another gateway \\(pid ${process.pid}\\).*\\[TL_DATA_DIR_LOCKED\\]$`))]);
      expect(err).toBe('threadline: 1 check failed\n');
    } finally {
      lock.release();
    }
  });

  it('fails on a data dir that is a file', async () => {
    const file = join(dataDir(), 'file');
    writeFileSync(file, '');
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: file, OTEL_TRACES_EXPORTER: 'none' });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([`✗ data dir ${file} is not a directory`, `✗ store not checked: the data dir ${file} is unusable`]);
  });

  it('fails on a store that does not open', async () => {
    const dir = dataDir();
    writeFileSync(join(dir, 'threadline.db'), 'not a database, but long enough to be read as one: '.repeat(100));
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dir, OTEL_TRACES_EXPORTER: 'none' });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([expect.stringMatching(/^✗ store .*threadline\.db does not open: .*\[TL_STORE_FAILED\]$/)]);
  });

  it('fails on a bad setting, and says how many more there are', async () => {
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), PORT: 'http', THREADLINE_CONCURRENCY: '0' });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([
      '✗ configuration invalid: Invalid PORT: "http" is not a whole number from 0 to 65535 [TL_CONFIG_INVALID] (and 1 more: threadline config)',
    ]);
  });

  it('fails on span privacy settings start refuses: a short HMAC key', async () => {
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: 'too-short' });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([
      expect.stringMatching(/^✗ configuration invalid: Invalid THREADLINE_SPAN_HMAC_KEY: .*\[TL_CONFIG_INVALID\]$/),
      '✗ telemetry endpoints not checked: the telemetry configuration is invalid',
    ]);
    expect(lines.join('\n')).not.toContain('too-short');
  });

  it('skips the telemetry endpoints when the telemetry settings are invalid', async () => {
    const { lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), OTEL_TRACES_EXPORTER: 'zipkin' });
    expect(failed(lines)).toEqual([
      expect.stringMatching(/^✗ configuration invalid: Invalid OTEL_TRACES_EXPORTER/),
      '✗ telemetry endpoints not checked: the telemetry configuration is invalid',
    ]);
  });

  it.each([
    ['http/protobuf', {}],
    ['grpc', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }],
  ])('connects to the OTLP traces endpoint (%s)', async (_protocol, extra) => {
    const collector = await listening();
    const endpoint = `http://127.0.0.1:${portOf(collector)}`;
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint, ...extra });
    expect(code).toBe(0);
    expect(lines).toContain(`✓ traces to otlp ${endpoint}/: 127.0.0.1:${portOf(collector)} accepts connections`);
  });

  it('fails when nothing listens at the OTLP endpoint, without showing its credentials', async () => {
    const port = await closedPort();
    const { code, lines } = await doctor({
      THREADLINE_DATA_DIR: dataDir(),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://user:collector-password@127.0.0.1:${port}/?token=collector-token`,
    });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([
      expect.stringMatching(new RegExp(`^✗ traces to otlp http://127\\.0\\.0\\.1:${port}/: 127\\.0\\.0\\.1:${port} cannot be reached: .*ECONNREFUSED`)),
      expect.stringMatching(new RegExp(`^✗ metrics to otlp http://127\\.0\\.0\\.1:${port}/: .*ECONNREFUSED`)),
    ]);
    expect(lines.join('\n')).not.toMatch(/collector-(password|token)/);
  });

  it('checks the trace file directory of the file exporter', async () => {
    const file = join(dataDir(), 'file');
    writeFileSync(file, '');
    const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), THREADLINE_TRACE_FILE: join(file, 'traces.jsonl') });
    expect(code).toBe(1);
    expect(failed(lines)).toEqual([`✗ traces to file ${join(file, 'traces.jsonl')}: trace file directory ${file} is not a directory`]);
  });

  it('fails when the Prometheus port is taken, passes when it is free', async () => {
    const taken = await listening();
    const env = { THREADLINE_DATA_DIR: dataDir(), OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1' };
    const busy = await doctor({ ...env, OTEL_EXPORTER_PROMETHEUS_PORT: String(portOf(taken)) });
    expect(busy.code).toBe(1);
    expect(failed(busy.lines)).toEqual([expect.stringMatching(new RegExp(`^✗ metrics to prometheus on 127\\.0\\.0\\.1:${portOf(taken)}: the port cannot be bound: .*EADDRINUSE`))]);
    const port = await closedPort();
    const free = await doctor({ ...env, OTEL_EXPORTER_PROMETHEUS_PORT: String(port) });
    expect(free.lines).toContain(`✓ metrics to prometheus on 127.0.0.1:${port}: the port is free`);
  });

  it('fails when no context manager propagates context', async () => {
    context.disable();
    try {
      const { code, lines } = await doctor({ THREADLINE_DATA_DIR: dataDir() }, { doctor: { installContext: () => undefined } });
      expect(code).toBe(1);
      expect(failed(lines)).toEqual([expect.stringMatching(/^✗ context manager not active: .*\[TL_NO_CONTEXT_MANAGER\]$/)]);
    } finally {
      installContext();
    }
  });

  it('installs the context manager itself, as the telemetry bootstrap does', async () => {
    context.disable();
    try {
      const { lines } = await doctor({ THREADLINE_DATA_DIR: dataDir(), OTEL_TRACES_EXPORTER: 'none' });
      expect(lines.at(-1)).toBe('✓ context manager active: session routing survives an await and a timer');
    } finally {
      context.disable();
      installContext();
    }
  });

  it('colours the marks on a terminal only', async () => {
    const plain = await doctor({ THREADLINE_DATA_DIR: dataDir(), OTEL_TRACES_EXPORTER: 'none' });
    expect(plain.out).not.toContain('\u001b[');
    const coloured = await doctor({ THREADLINE_DATA_DIR: dataDir(), OTEL_TRACES_EXPORTER: 'none' }, { color: true });
    expect(coloured.out).toContain('\u001b[32m✓\u001b[39m configuration valid');
  });
});

