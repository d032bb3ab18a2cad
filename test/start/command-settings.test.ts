import { describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { commandSettings } from '../../src/start/command-settings.js';

const onRedis = (url: string, extra: Record<string, string> = {}) =>
  readGatewayConfig({ THREADLINE_DATA_DIR: '/srv/tl', THREADLINE_REDIS_URL: url, THREADLINE_REDIS_PREFIX: 'prod', ...extra });

describe('the settings the gateway gives its commands', () => {
  it('on SQLite: its platforms, its data dir made absolute, and the store to write to', () => {
    const settings = commandSettings(readGatewayConfig({ THREADLINE_DATA_DIR: 'relative/data' }), ['webhook', 'telegram'], 'sqlite');
    expect(settings).toEqual({ THREADLINE_SEND_PLATFORMS: 'webhook,telegram', THREADLINE_DATA_DIR: `${process.cwd()}/relative/data`, THREADLINE_SEND_STORE: 'sqlite' });
  });

  it('on a Redis without credentials: its URL and prefix', () => {
    expect(commandSettings(onRedis('redis://10.0.0.5:6379/2'), ['webhook'], 'redis')).toEqual({
      THREADLINE_SEND_PLATFORMS: 'webhook',
      THREADLINE_DATA_DIR: '/srv/tl',
      THREADLINE_SEND_STORE: 'redis',
      THREADLINE_REDIS_URL: 'redis://10.0.0.5:6379/2',
      THREADLINE_REDIS_PREFIX: 'prod',
    });
  });

  it('on a Redis with a password, a user, a query or more path than a database: no URL, so a send fails instead of writing elsewhere', () => {
    for (const url of ['redis://:hunter2@cache:6379', 'redis://app@cache:6379', 'redis://cache:6379?password=hunter2', 'redis://cache:6379/0/hunter2']) {
      const settings = commandSettings(onRedis(url), ['webhook'], 'redis');
      expect(settings).toMatchObject({ THREADLINE_SEND_STORE: 'redis', THREADLINE_REDIS_PREFIX: 'prod' });
      expect(settings).not.toHaveProperty('THREADLINE_REDIS_URL');
      expect(JSON.stringify(settings)).not.toContain('hunter2');
    }
  });

  it('on a store the embedder gave: no store named, the command decides', () => {
    expect(commandSettings(onRedis('redis://cache:6379'), ['webhook'], 'given')).toEqual({ THREADLINE_SEND_PLATFORMS: 'webhook', THREADLINE_DATA_DIR: '/srv/tl' });
  });
});
