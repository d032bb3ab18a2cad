import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { startGateway } from '../../src/start/start-gateway.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { collectOutput, spawnGateway } from '../helpers/gateway-process.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-intake-'));
  dirs.push(dir);
  return dir;
}

function refusal(env: NodeJS.ProcessEnv): ConfigError {
  try {
    readGatewayConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`readGatewayConfig accepted ${JSON.stringify(env)}`);
}

describe('no unauthenticated intake off loopback', () => {
  it.each(['0.0.0.0', '::', '10.1.2.3', '::ffff:10.1.2.3', 'gateway.example.com'])('refuses HOST=%s with no webhook token, saying what to set', (host) => {
    const error = refusal({ HOST: host });
    expect(error.variable).toBe('THREADLINE_WEBHOOK_TOKEN');
    expect(error.message).toContain(`HOST=${host}`);
    for (const fix of ['Set THREADLINE_WEBHOOK_TOKEN', 'HOST=127.0.0.1', 'THREADLINE_ALLOW_UNAUTHENTICATED=1']) expect(error.message).toContain(fix);
  });

  it.each([undefined, '127.0.0.1', '127.8.9.10', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST'])(
    'takes HOST=%s with no token, as before',
    (host) => {
      const config = readGatewayConfig(host === undefined ? {} : { HOST: host });
      expect(config.webhook.token).toBeUndefined();
      expect(config.unauthenticatedOffLoopback).toBe(false);
    },
  );

  it('takes any HOST with a token', () => {
    const config = readGatewayConfig({ HOST: '0.0.0.0', THREADLINE_WEBHOOK_TOKEN: 'a-long-random-string' });
    expect(config.unauthenticatedOffLoopback).toBe(false);
  });

  it('takes HOST=0.0.0.0 with no token only when THREADLINE_ALLOW_UNAUTHENTICATED=1 says so', () => {
    expect(readGatewayConfig({ HOST: '0.0.0.0', THREADLINE_ALLOW_UNAUTHENTICATED: '1' }).unauthenticatedOffLoopback).toBe(true);
    expect(refusal({ HOST: '0.0.0.0', THREADLINE_ALLOW_UNAUTHENTICATED: '0' }).variable).toBe('THREADLINE_WEBHOOK_TOKEN');
    expect(refusal({ HOST: '0.0.0.0', THREADLINE_ALLOW_UNAUTHENTICATED: 'yes' }).variable).toBe('THREADLINE_ALLOW_UNAUTHENTICATED');
  });

  it('warns at start when allowed, and the banner says "no token"', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void lines.push(line) } });
    // Allowed off loopback, yet bound to loopback here: a test opens no port to the network.
    const config = { ...readGatewayConfig({ PORT: '0', THREADLINE_DATA_DIR: dataDir() }), unauthenticatedOffLoopback: true };
    const running = await startGateway(config, { logger });
    try {
      const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
      expect(warnings).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringContaining('no token') }));
      expect(running.platforms.map((platform) => platform.describe(running.url)).join(' · ')).toContain('(no token)');
    } finally {
      await running.stop();
    }
  });

  it('npm start with HOST=0.0.0.0 and no token exits 1 before listening, with one line that says what to set', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOST: '0.0.0.0', PORT: '0', THREADLINE_DATA_DIR: dataDir(), THREADLINE_LOG_LEVEL: 'warn' };
    delete env['THREADLINE_WEBHOOK_TOKEN'];
    delete env['THREADLINE_ALLOW_UNAUTHENTICATED'];
    const child = spawnGateway(env);
    children.push(child);
    const { stdout, stderr, exited } = collectOutput(child);
    // A gateway that starts anyway is stopped at its banner, not left listening on every interface.
    child.stdout!.on('data', () => {
      if (stdout().includes('listening')) child.kill('SIGKILL');
    });
    const code = await exited;
    expect(stdout()).not.toContain('listening');
    expect(code).toBe(1);
    expect(stderr()).toMatch(/^threadline: Invalid THREADLINE_WEBHOOK_TOKEN: is required with HOST=0\.0\.0\.0.*HOST=127\.0\.0\.1.*\[TL_CONFIG_INVALID\]\n$/);
  });
});
