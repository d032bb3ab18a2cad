import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import { collectOutput, isolatedEnv, runGatewayProcess, spawnGateway } from '../helpers/gateway-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback port free a moment ago: the exporter is configured by number, as in production. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The value of the one sample of `metric` whose labels include every one of `labels`. */
function sample(text: string, metric: string, labels: Record<string, string>): number | undefined {
  const values = text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`) && Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
  if (values.length > 1) throw new Error(`${metric} ${JSON.stringify(labels)} matches ${values.length} samples`);
  return values[0];
}

/** Each metric family of a scrape, by its `# TYPE` line: name to type. A family typed twice (two scopes) fails: strict parsers refuse it. */
function families(text: string): Map<string, string> {
  const typed = text
    .split('\n')
    .filter((line) => line.startsWith('# TYPE '))
    .map((line) => line.split(' ').slice(2, 4) as [string, string]);
  const twice = typed.map(([name]) => name).filter((name, index, names) => names.indexOf(name) !== index);
  if (twice.length > 0) throw new Error(`metric families typed more than once: ${twice.join(', ')}`);
  return new Map(typed);
}

/** The metrics table of docs/operations.md: the name as scraped to its type. */
function documentedMetrics(): Map<string, string> {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const rows = [...doc.matchAll(/^\| `[^`]+` \| `([a-z0-9_]+)` \| (counter|gauge|histogram) \|/gm)];
  return new Map(rows.map((row) => [row[1]!, row[2]!]));
}

describe('OTEL_METRICS_EXPORTER=prometheus', () => {
  it('serves threadline metrics of real traffic to a scrape of the running gateway', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'threadline-prometheus-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const scrapeUrl = `http://127.0.0.1:${port}/metrics`;
    let scraped = '';
    const run = await runGatewayProcess(
      isolatedEnv({
        THREADLINE_DATA_DIR: dataDir,
        THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
        THREADLINE_DELIVERY_BACKOFF_MS: '20',
        THREADLINE_DELIVERY_BACKOFF_MAX_MS: '50',
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
        OTEL_SERVICE_NAME: 'threadline-scraped',
      }),
      async (base) => {
        const post = (body: object) =>
          fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        receiver.failNext(1, 503);
        expect((await post({ chat_id: 'a', text: 'one' })).status).toBe(202);
        expect((await post({ chat_id: 'b', text: 'two' })).status).toBe(202);
        expect((await post({ chat_id: 'c' })).status).toBe(400);
        // Both replies delivered, one of them after a retry.
        await receiver.waitFor(2);
        await until(async () => {
          scraped = await (await fetch(scrapeUrl)).text();
          return sample(scraped, 'threadline_deliveries_total', { threadline_delivery_kind: 'reply', threadline_delivery_result: 'sent' }) === 2;
        });
      },
    );
    expect(run.code).toBe(0);
    const webhook = { messaging_system: 'webhook' };
    expect(sample(scraped, 'threadline_messages_accepted_total', webhook)).toBe(2);
    expect(sample(scraped, 'threadline_messages_refused_total', { ...webhook, error_type: 'TL_BAD_REQUEST' })).toBe(1);
    expect(sample(scraped, 'threadline_turn_duration_seconds_count', { ...webhook, threadline_turn_result: 'ok' })).toBe(2);
    expect(sample(scraped, 'threadline_turn_duration_seconds_bucket', { ...webhook, threadline_turn_result: 'ok', le: '+Inf' })).toBe(2);
    expect(sample(scraped, 'threadline_delivery_latency_seconds_count', { ...webhook, threadline_delivery_kind: 'reply' })).toBe(2);
    expect(sample(scraped, 'http_server_request_duration_seconds_count', { http_request_method: 'POST', http_route: '/v1/messages', http_response_status_code: '202', url_scheme: 'http' })).toBe(2);
    expect(sample(scraped, 'http_server_request_duration_seconds_count', { http_request_method: 'POST', http_route: '/v1/messages', http_response_status_code: '400' })).toBe(1);
    expect(sample(scraped, 'threadline_deliveries_total', { ...webhook, threadline_delivery_kind: 'reply', threadline_delivery_result: 'sent' })).toBe(2);
    expect(sample(scraped, 'threadline_delivery_retries_total', { ...webhook, threadline_delivery_kind: 'reply' })).toBe(1);
    expect(sample(scraped, 'threadline_outbox_pending', {})).toBe(0);
    expect(sample(scraped, 'threadline_outbox_oldest_pending_age_seconds', {})).toBe(0);
    expect(sample(scraped, 'threadline_intake_queued', {})).toBe(0);
    expect(scraped).toMatch(/^target_info\{[^}]*service_name="threadline-scraped"[^}]*service_version="\d+\.\d+\.\d+/m);
  });

  it('serves every metric of the docs/operations.md table and none it lacks, counters at 0 from the start', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'threadline-prometheus-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const scrapeUrl = `http://127.0.0.1:${port}/metrics`;
    const documented = documentedMetrics();
    let first = '';
    // Families seen in any scrape: the event loop delay gauges skip a collection with too few samples.
    const seen = new Map<string, string>();
    const units: string[] = [];
    await runGatewayProcess(
      isolatedEnv({
        THREADLINE_DATA_DIR: dataDir,
        THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
      }),
      async (base) => {
        first = await (await fetch(scrapeUrl)).text();
        let sent = 0;
        await until(async () => {
          const response = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'a', text: 'x' }) });
          expect(response.status).toBe(202);
          await receiver.waitFor(++sent);
          const text = await (await fetch(scrapeUrl)).text();
          for (const [name, type] of families(text)) seen.set(name, type);
          units.push(...text.split('\n').filter((line) => line.startsWith('# UNIT ')));
          return [...documented.keys()].every((name) => seen.has(name));
        }, 20_000);
      },
    );
    // Right after start, before any traffic: every threadline counter is there, at 0.
    const counters = [...documented].filter(([name, type]) => type === 'counter' && name.startsWith('threadline_')).map(([name]) => name);
    expect(counters.length).toBeGreaterThan(5);
    for (const counter of counters) {
      const values = first.split('\n').filter((line) => line.startsWith(`${counter}{`) || line.startsWith(`${counter} `));
      expect(values, counter).not.toEqual([]);
      expect(values.every((line) => line.endsWith(' 0')), counter).toBe(true);
    }
    expect(sample(first, 'threadline_deliveries_total', { messaging_system: 'webhook', threadline_delivery_kind: 'cron', threadline_delivery_result: 'dead_letter' })).toBe(0);
    // Both ways, with the type each is scraped as.
    expect(Object.fromEntries([...seen].filter(([name]) => name !== 'target_info'))).toEqual(Object.fromEntries(documented));
    // OpenMetrics: a unit is the suffix of its metric's name, never an annotation such as {message}.
    expect(units.length).toBeGreaterThan(0);
    for (const line of units) {
      const [, , name, unit] = line.split(' ');
      expect(unit, line).toMatch(/^[a-z_]+$/);
      expect(name!.endsWith(`_${unit}`), line).toBe(true);
    }
  });

  it('stops start-up with a clear error when the Prometheus port is taken', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const port = (holder.address() as AddressInfo).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'threadline-prometheus-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const child = spawnGateway(
      isolatedEnv({ THREADLINE_DATA_DIR: dataDir, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: String(port) }),
    );
    cleanups.push(() => void child.kill('SIGKILL'));
    const { output, exited } = collectOutput(child);
    expect(await exited).not.toBe(0);
    expect(output()).toContain(`Cannot serve Prometheus metrics on 127.0.0.1:${port} (EADDRINUSE)`);
    expect(output()).toContain('OTEL_EXPORTER_PROMETHEUS_PORT');
    expect(output()).not.toContain('listening on');
  });
});
