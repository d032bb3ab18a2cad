import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { collectOutput, isolatedEnv, spawnGateway } from '../helpers/gateway-process.js';

/**
 * The banner promises a clean stop: a SIGINT sent the instant it is out (npm forwarding Ctrl-C
 * to a gateway the scheduler has not run since) must find the listener that drains and exits 0,
 * not the default action that kills the process.
 */
const FIXTURE = new URL('./fixtures/signal-at-banner.mjs', import.meta.url).href;

const dataDirs: string[] = [];
afterEach(() => {
  for (const dir of dataDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('stops cleanly on a SIGINT that arrives as the banner is written', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'threadline-signal-at-banner-'));
  dataDirs.push(dataDir);
  const child = spawnGateway(isolatedEnv({ THREADLINE_DATA_DIR: dataDir, THREADLINE_LOG_LEVEL: 'warn' }), 'pipe', ['--import', FIXTURE]);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const { output } = collectOutput(child);
  expect(await exit, output()).toEqual({ code: 0, signal: null });
  expect(output()).toMatch(/threadline ready · listening on/);
});
