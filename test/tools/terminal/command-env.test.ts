import { afterEach, describe, expect, it } from 'vitest';
import { commandEnv } from '../../../src/tools/terminal/command-env.js';
import { readToolsConfig } from '../../../src/tools/tools-config.js';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { terminalHarness, useDataDirs } from './terminal-fixture.js';

useGlobalTracing();
const dataDir = useDataDirs();

describe('the environment of a command the model runs', () => {
  afterEach(() => {
    delete process.env['THREADLINE_REDIS_URL'];
  });

  it('has the gateway\'s environment without its secrets', () => {
    const env = commandEnv({ PATH: '/bin', THREADLINE_REDIS_URL: 'redis://:hunter2@cache:6379', THREADLINE_LLM_API_KEY: 'sk-x', THREADLINE_REDIS_PREFIX: 'prod' }, []);
    expect(env).toEqual({ PATH: '/bin', THREADLINE_REDIS_PREFIX: 'prod' });
  });

  it('is allow-listed: no URL settings, exporter endpoints as origins, no exporter headers, no admins, nothing unknown unless THREADLINE_TERMINAL_ENV names it', () => {
    const env = commandEnv({
      PATH: '/bin',
      HOME: '/root',
      LC_ALL: 'C.UTF-8',
      THREADLINE_WEBHOOK_DELIVERY_URL: 'https://bot:s3cret@hooks.example/in?key=q1',
      THREADLINE_LLM_BASE_URL: 'https://user:pw@llm.example/v1',
      THREADLINE_ADMINS: 'telegram:42',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer otlp-secret',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://u:otlppw@otel.example:4318/v1/key-in-path',
      OTEL_EXPORTER_OTLP_CLIENT_KEY: '/etc/otel/key.pem',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-key=1',
      OTEL_SERVICE_NAME: 'gw',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      AWS_PROFILE: 'ops',
      THREADLINE_TERMINAL_ENV: 'AWS_PROFILE',
    }, ['AWS_PROFILE']);
    expect(env).toEqual({
      PATH: '/bin',
      HOME: '/root',
      LC_ALL: 'C.UTF-8',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example:4318',
      OTEL_SERVICE_NAME: 'gw',
      AWS_PROFILE: 'ops',
      THREADLINE_TERMINAL_ENV: 'AWS_PROFILE',
    });
  });

  it('refuses THREADLINE_TERMINAL_ENV naming a secret, a URL setting or the admins', () => {
    for (const name of ['THREADLINE_LLM_API_KEY', 'OTEL_EXPORTER_OTLP_HEADERS', 'THREADLINE_WEBHOOK_DELIVERY_URL', 'THREADLINE_ADMINS', 'A B']) {
      expect(() => readToolsConfig({ THREADLINE_TERMINAL_ENV: `AWS_PROFILE,${name}` }, dataDir())).toThrow(/THREADLINE_TERMINAL_ENV/);
    }
    expect(readToolsConfig({ THREADLINE_TERMINAL_ENV: 'AWS_PROFILE, KUBECONFIG' }, dataDir()).terminal.passedEnv).toEqual(['AWS_PROFILE', 'KUBECONFIG']);
  });

  it('takes what the running gateway says of itself over its environment, the session still its own', () => {
    const env = commandEnv(
      { PATH: '/bin', THREADLINE_DATA_DIR: './data', THREADLINE_SESSION_CHAT_ID: 'stale' },
      [],
      { THREADLINE_DATA_DIR: '/srv/threadline/data', THREADLINE_SEND_PLATFORMS: 'webhook,slack', THREADLINE_SEND_STORE: 'sqlite' },
    );
    expect(env).toEqual({ PATH: '/bin', THREADLINE_DATA_DIR: '/srv/threadline/data', THREADLINE_SEND_PLATFORMS: 'webhook,slack', THREADLINE_SEND_STORE: 'sqlite' });
  });

  it('is what the terminal tool gives a command: the Redis password cannot be printed into a chat', async () => {
    process.env['THREADLINE_REDIS_URL'] = 'redis://:hunter2@127.0.0.1:6379';
    const harness = terminalHarness({ dataDir: dataDir() });
    const result = await harness.call('terminal', { command: 'echo "url=${THREADLINE_REDIS_URL:-none}"' });
    expect(result.text).toContain('url=none');
    expect(result.text).not.toContain('hunter2');
  });
});
