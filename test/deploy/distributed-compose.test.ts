import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { connectRedis } from '../../src/store/redis/redis-connection.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { checkRedis } from '../../src/store/redis/redis-requirements.js';
import { startRedisServer } from '../helpers/redis.js';

// Docker does not run on these machines: the distributed profile is checked by reading
// docker-compose.yml with its merge keys applied, as compose applies them.
interface Service {
  image?: string;
  build?: string;
  profiles?: string[];
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  restart?: string;
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
}
const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = compose.services;
const inProfile = Object.entries(services).filter(([, service]) => service.profiles?.includes('distributed'));
const gateways = inProfile.filter(([, service]) => service.build === '.');
const TOKEN = { THREADLINE_WEBHOOK_TOKEN: 'a-long-random-string' };

const clients: Redis[] = [];
afterAll(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

describe("docker-compose.yml's distributed profile", () => {
  it('leaves the default services as they were: no profile, so `docker compose up` starts them alone', () => {
    for (const name of ['threadline', 'otel-collector', 'jaeger']) expect(services[name]?.profiles, name).toBeUndefined();
    expect(services['threadline']!.environment).not.toHaveProperty('THREADLINE_REDIS_URL');
  });

  it('adds Redis and two gateways', () => {
    expect(inProfile.map(([name]) => name).sort()).toEqual(['redis', 'threadline-1', 'threadline-2']);
    expect(services['redis']!.image).toMatch(/^redis:7\./);
  });

  it('runs Redis with the append-only file on, noeviction, a volume for its data, and no published port', () => {
    const redis = services['redis']!;
    expect(redis.command?.[0]).toBe('redis-server');
    const args = redis.command!.slice(1);
    expect(args.join(' ')).toContain('--appendonly yes');
    expect(args.join(' ')).toContain('--maxmemory-policy noeviction');
    const [volume, path] = redis.volumes![0]!.split(':');
    expect(path).toBe('/data');
    expect(compose.volumes).toHaveProperty(volume!);
    expect(redis.ports).toBeUndefined();
    expect(redis.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it("gives Redis the command line checkRedis passes with neither problem nor warning", async () => {
    // The image's redis-server, here: its arguments on top of the test server's own.
    const server = await startRedisServer({ args: services['redis']!.command!.slice(1) });
    const client = await connectRedis(server.url);
    clients.push(client);
    const { problems, warnings } = await checkRedis(client, { keys: new RedisKeys('compose') });
    expect({ problems, warnings }).toEqual({ problems: [], warnings: [] });
  });

  it.each(gateways.map(([name]) => name))('points %s at the Redis service, with the same prefix as the other', (name) => {
    const redis = readGatewayConfig({ ...services[name]!.environment, ...TOKEN }).redis;
    expect(redis).toBeDefined();
    const url = new URL(redis!.url);
    expect(url.hostname).toBe('redis');
    expect(url.port).toBe('6379');
    const other = gateways.find(([otherName]) => otherName !== name)![1];
    const theirs = readGatewayConfig({ ...other.environment, ...TOKEN }).redis!;
    expect(redis!.prefix).toBe(theirs.prefix);
    expect(redis!.workers).toEqual({ turns: true, deliveries: true });
  });

  it('gives each gateway its own data volume and host port, and its own instance id that outlives the container', () => {
    const volumes = gateways.map(([, service]) => service.volumes![0]!);
    expect(new Set(volumes).size).toBe(gateways.length);
    for (const volume of volumes) expect(compose.volumes).toHaveProperty(volume.split(':')[0]!);
    expect(volumes.every((volume) => volume.endsWith(':/data'))).toBe(true);
    const hostPorts = [...gateways, ['threadline', services['threadline']!] as const].map(([, service]) => service.ports![0]!.split(':')[0]);
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
    // Set, not the default (a container's host name is new each time it is re-created): its background commands stay its own.
    const instances = gateways.map(([, service]) => service.environment!['THREADLINE_INSTANCE_ID']);
    expect(instances.every((instance) => typeof instance === 'string' && instance !== '')).toBe(true);
    expect(new Set(instances).size).toBe(gateways.length);
  });

  it('starts the gateways once Redis answers, and runs them as the single gateway runs', () => {
    const single = services['threadline']!;
    for (const [name, service] of gateways) {
      expect(service.depends_on, name).toMatchObject({ redis: { condition: 'service_healthy' } });
      expect(service.restart, name).toBe(single.restart);
      expect(service.stop_grace_period, name).toBe(single.stop_grace_period);
      for (const variable of ['HOST', 'PORT', 'THREADLINE_DATA_DIR', 'THREADLINE_SHUTDOWN_TIMEOUT_MS', 'THREADLINE_WEBHOOK_TOKEN', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
        expect(service.environment![variable], `${name} ${variable}`).toBe(single.environment![variable]);
      }
    }
  });
});
