import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';

// Docker does not run on these machines, so the wiring between the deployment files is
// checked by reading them: every name and port one file uses must be one another defines.
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, { image?: string; build?: string; command?: string[]; ports?: string[]; environment?: Record<string, string>; volumes?: string[] }>;
};
const collector = parse(read('otel/collector.yaml')) as {
  receivers: { otlp: { protocols: Record<string, { endpoint: string }> } };
  processors: Record<string, unknown>;
  exporters: Record<string, { endpoint?: string; tls?: { insecure?: boolean } }>;
  service: { pipelines: Record<string, { receivers: string[]; processors: string[]; exporters: string[] }> };
};
const dockerfile = read('Dockerfile');

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
});
