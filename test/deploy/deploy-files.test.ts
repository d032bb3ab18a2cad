import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';
import { startTestGateway } from '../../src/testing/index.js';

// Docker does not run on these machines, so the wiring between the deployment files is
// checked by reading them: every name and port one file uses must be one another defines.
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const compose = parse(read('docker-compose.yml')) as {
  services: Record<
    string,
    {
      image?: string;
      build?: string;
      command?: string[];
      ports?: string[];
      environment?: Record<string, string>;
      volumes?: string[];
      restart?: string;
      stop_grace_period?: string;
    }
  >;
};
const collector = parse(read('otel/collector.yaml')) as {
  receivers: { otlp: { protocols: Record<string, { endpoint: string }> } };
  processors: Record<string, unknown>;
  exporters: Record<string, { endpoint?: string; tls?: { insecure?: boolean } }>;
  service: { pipelines: Record<string, { receivers: string[]; processors: string[]; exporters: string[] }> };
};
const dockerfile = read('Dockerfile');

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A compose duration ("1m30s", "40s", "500ms") in milliseconds. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  expect(parts.map((part) => part[0]).join('')).toBe(text);
  return parts.reduce((total, [, value, unit]) => total + Number(value) * units[unit!]!, 0);
}

/** The Dockerfile's HEALTHCHECK: its options and its exec-form command. */
function healthcheck(): { options: Record<string, string>; command: string[] } {
  const match = /^HEALTHCHECK((?: --[\w-]+=\S+)*) \\?\s*CMD (\[.*\])$/m.exec(dockerfile);
  expect(match, 'a HEALTHCHECK with an exec-form CMD').not.toBeNull();
  const options = Object.fromEntries([...match![1]!.matchAll(/--([\w-]+)=(\S+)/g)].map((option) => [option[1]!, option[2]!]));
  return { options, command: JSON.parse(match![2]!) as string[] };
}

/** Runs the image's health check command here with `PORT`; its exit code. */
function runHealthcheck(port: number): Promise<number> {
  const [file, ...args] = healthcheck().command;
  return new Promise((resolve) => {
    execFile(file === 'node' ? process.execPath : file!, args, { env: { PATH: process.env['PATH'] ?? '', PORT: String(port) } }, (error) =>
      resolve(error === null ? 0 : Number(error.code ?? -1)),
    );
  });
}

/** A loopback server answering every request with `status`; its port. */
async function answering(status: number): Promise<number> {
  const server = createServer((_request, response) => response.writeHead(status).end('{}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

/** A loopback port that was just free and on which nothing listens now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const hostPort = (endpoint: string) => {
  const url = new URL(endpoint.includes('://') ? endpoint : `http://${endpoint}`);
  return { host: url.hostname, port: url.port };
};

describe('docker-compose.yml, otel/collector.yaml and the Dockerfile agree', () => {
  const services = compose.services;

  it('runs the gateway, the contrib collector and Jaeger v2', () => {
    expect(services['threadline']?.build).toBe('.');
    expect(services['otel-collector']?.image).toMatch(/^otel\/opentelemetry-collector-contrib:/);
    expect(services['jaeger']?.image).toMatch(/^jaegertracing\/jaeger:2\./);
    expect(services['jaeger']?.ports).toContain('16686:16686');
  });

  it('points the gateway at the collector OTLP/HTTP receiver it publishes', () => {
    const env = services['threadline']!.environment!;
    const target = hostPort(env['OTEL_EXPORTER_OTLP_ENDPOINT']!);
    expect(Object.keys(services)).toContain(target.host);
    expect(env['OTEL_EXPORTER_OTLP_PROTOCOL']).toBe('http/protobuf');
    const http = hostPort(collector.receivers.otlp.protocols['http']!.endpoint);
    expect(http.port).toBe(target.port);
    expect(services[target.host]!.ports).toContain(`${http.port}:${http.port}`);
  });

  it('binds the collector receivers to every interface inside the container network', () => {
    for (const protocol of Object.values(collector.receivers.otlp.protocols)) {
      expect(hostPort(protocol.endpoint).host).toBe('0.0.0.0');
    }
  });

  it('mounts the collector config where its command reads it', () => {
    const service = services['otel-collector']!;
    const configPath = service.command!.find((arg) => arg.startsWith('--config='))!.slice('--config='.length);
    expect(service.volumes).toContain(`./otel/collector.yaml:${configPath}:ro`);
  });

  it('wires a traces pipeline from OTLP to Jaeger through defined components', () => {
    const traces = collector.service.pipelines['traces']!;
    expect(traces.receivers).toEqual(['otlp']);
    for (const processor of traces.processors) expect(collector.processors).toHaveProperty(processor);
    for (const exporter of traces.exporters) expect(collector.exporters).toHaveProperty(exporter);
    const jaeger = Object.entries(collector.exporters).find(([name]) => traces.exporters.includes(name) && name.startsWith('otlp'))!;
    const target = hostPort(jaeger[1].endpoint!);
    expect(target.host).toBe('jaeger');
    expect(target.port).toBe('4317');
    expect(jaeger[1].tls?.insecure).toBe(true);
  });

  it('wires a metrics pipeline from OTLP through defined components, since the gateway sends metrics there too', () => {
    const env = services['threadline']!.environment!;
    const { metrics } = readTelemetryConfig({ ...env, THREADLINE_WEBHOOK_TOKEN: 'a-long-random-string' });
    expect(metrics.exporter).toBe('otlp');
    const pipeline = collector.service.pipelines['metrics'];
    expect(pipeline?.receivers).toEqual(['otlp']);
    for (const processor of pipeline!.processors) expect(collector.processors).toHaveProperty(processor);
    expect(pipeline!.exporters.length).toBeGreaterThan(0);
    for (const exporter of pipeline!.exporters) expect(collector.exporters).toHaveProperty(exporter);
  });

  it('builds a non-root node:24-slim image that starts with the telemetry bootstrap on the compose port', () => {
    expect(dockerfile).toMatch(/^FROM node:24-slim/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toContain('"--import", "./dist/telemetry/register.js"');
    const port = /^EXPOSE (\d+)$/m.exec(dockerfile)![1];
    expect(services['threadline']!.ports).toContain(`${port}:${port}`);
    expect(services['threadline']!.environment!['HOST']).toBe('0.0.0.0');
  });

  it('takes the webhook token from the environment: compose requires one, the image holds none', () => {
    const env = services['threadline']!.environment!;
    expect(env['THREADLINE_WEBHOOK_TOKEN']).toMatch(/^\$\{THREADLINE_WEBHOOK_TOKEN:\?[^}]+\}$/);
    expect(env).not.toHaveProperty('THREADLINE_ALLOW_UNAUTHENTICATED');
    const instructions = dockerfile.replace(/^\s*#.*$/gm, '');
    expect(instructions).not.toMatch(/THREADLINE_WEBHOOK_TOKEN|THREADLINE_ALLOW_UNAUTHENTICATED/);
  });

  it('starts with the token compose passes on, and the image alone refuses to start on 0.0.0.0', () => {
    const env = services['threadline']!.environment!;
    expect(readGatewayConfig({ ...env, THREADLINE_WEBHOOK_TOKEN: 'a-long-random-string' }).host).toBe('0.0.0.0');
    const finalStage = dockerfile.split(/^FROM /m).at(-1)!;
    const envBlock = /^ENV ((?:.*\\\n)*.*)$/m.exec(finalStage)![1]!;
    const imageEnv = Object.fromEntries([...envBlock.matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1]!, match[2]!]));
    expect(imageEnv['HOST']).toBe('0.0.0.0');
    expect(() => readGatewayConfig(imageEnv)).toThrow(/THREADLINE_WEBHOOK_TOKEN.*HOST=127\.0\.0\.1/);
  });

  it('compiles better-sqlite3 against Node 24 headers older than 24.19, whose ObjectWrap aborts on GC', () => {
    expect(dockerfile).toMatch(/^FROM node:24-slim AS build$/m);
    expect(dockerfile).toMatch(/npm_config_build_from_source=true/);
    const target = /npm_config_target=(\d+)\.(\d+)\.(\d+)/.exec(dockerfile);
    expect(target).not.toBeNull();
    expect(Number(target![1])).toBe(24);
    expect(Number(target![2])).toBeLessThan(19);
  });

  it('checks health with node (the slim image has no curl) against /v1/ready, in exec form, within its timeout', () => {
    const { options, command } = healthcheck();
    expect(command.slice(0, 2)).toEqual(['node', '-e']);
    expect(command[2]).toContain('/v1/ready');
    expect(command[2]).toContain('process.env.PORT');
    const timeout = /AbortSignal\.timeout\((\d+)\)/.exec(command[2]!);
    expect(Number(timeout?.[1])).toBeLessThan(durationMs(options['timeout']!));
    // Replaying what an earlier process left may take a while: no failures counted before it ends.
    expect(durationMs(options['start-period']!)).toBeGreaterThan(0);
  });

  it('the health check passes against a ready gateway, and fails on a 503 or when nothing listens', async () => {
    const gateway = await startTestGateway();
    cleanups.push(() => gateway.stop());
    expect(await runHealthcheck(Number(new URL(gateway.url).port))).toBe(0);
    expect(await runHealthcheck(await answering(503))).toBe(1);
    expect(await runHealthcheck(await closedPort())).toBe(1);
  });

  it('runs node itself as the container process, so docker stop\'s SIGTERM reaches the gateway', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile.split(/^FROM /m).at(-1)!);
    expect(cmd).not.toBeNull();
    expect((JSON.parse(cmd![1]!) as string[])[0]).toBe('node');
  });

  it('restarts the gateway unless stopped, and gives it longer to stop than its shutdown timeout', () => {
    const service = services['threadline']!;
    expect(service.restart).toBe('unless-stopped');
    const { shutdownTimeoutMs } = readGatewayConfig({ ...service.environment, THREADLINE_WEBHOOK_TOKEN: 'a-long-random-string' });
    // After the drain, spans and metrics are flushed, each OTLP export bounded by its own 10 s timeout.
    expect(durationMs(service.stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(shutdownTimeoutMs + 15_000);
  });

  it('keeps the .env holding the webhook token out of the build context', () => {
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });
});
