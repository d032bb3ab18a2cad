import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/gateway.js';
import { isolatedEnv, runGatewayProcess } from '../helpers/gateway-process.js';
import { startRedisServer } from '../helpers/redis.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The JSON log lines at `level` (pino's number) whose message holds `text`. */
function logLines(output: string, level: number, text: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry['level'] === level && String(entry['msg']).includes(text));
}

describe('a Redis made unsuitable while the gateway runs', () => {
  it('turns readiness 503, logs an error, counts it and refuses intake; set back, the gateway is ready again', async () => {
    // A server of its own: the policy is changed under the gateway, which no other test may see.
    const server = await startRedisServer();
    const admin = new Redis(server.url);
    cleanups.push(() => admin.quit());
    const dataDir = mkdtempSync(join(tmpdir(), 'threadline-suitability-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const metricsPort = await freePort();
    // INFO calls this Redis answered, less this test's own: the gateway's checks, three calls each.
    let ownInfoCalls = 0;
    const gatewayInfoCalls = async (): Promise<number> => {
      ownInfoCalls++;
      const calls = Number(/cmdstat_info:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
      return calls - ownInfoCalls;
    };
    const run = await runGatewayProcess(
      isolatedEnv({
        THREADLINE_DATA_DIR: dataDir,
        THREADLINE_REDIS_URL: server.url,
        THREADLINE_REDIS_CHECK_INTERVAL_MS: '100',
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
      }),
      async (base, output) => {
        const ready = () => fetch(`${base}/v1/ready`);
        const post = () => fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'ops', text: 'hello' }) });
        expect((await ready()).status).toBe(200);

        await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
        await until(async () => (await ready()).status === 503, 10_000);
        const unready = (await (await ready()).json()) as { error: string; code: string };
        expect(unready.code).toBe('TL_REDIS_UNSUITABLE');
        expect(unready.error).toContain('maxmemory-policy is allkeys-lru');
        await until(() => logLines(output(), 50, 'Redis').length > 0);
        expect(logLines(output(), 50, 'Redis')[0]!['msg']).toContain('maxmemory-policy is allkeys-lru');
        const refused = await post();
        expect(refused.status).toBe(503);
        expect(((await refused.json()) as { code: string }).code).toBe('TL_REDIS_UNSUITABLE');
        // Two more whole checks (three INFO each) while it stays unsuitable: still one log line, one count.
        const checked = await gatewayInfoCalls();
        await until(async () => (await gatewayInfoCalls()) >= checked + 9, 10_000);
        const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        expect(scraped).toMatch(/^threadline_redis_unsuitable_total(\{[^}]*\})? 1$/m);

        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await until(async () => (await ready()).status === 200, 10_000);
        expect((await post()).status).toBe(202);
        // The line that says so comes after every check that found it unsuitable.
        await until(() => logLines(output(), 30, 'can hold threadline').length === 1);
        expect(logLines(output(), 50, 'Redis')).toHaveLength(1);
      },
    );
    expect(run.code).toBe(0);
  }, 60_000);
});
