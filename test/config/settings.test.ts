import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkConfiguration } from '../../src/start/check-configuration.js';
import { CONFIGURATION_DOC_PATH, renderConfigurationDoc } from '../../src/config/configuration-doc.js';
import { describeConfiguration } from '../../src/start/describe-settings.js';
import { SETTINGS, SETTING_NAMES, type Setting, type SettingName } from '../../src/config/settings.js';
import { ConfigError } from '../../src/errors.js';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { SESSION_ENV } from '../../src/session/session-env.js';
import { readTelemetryConfig } from '../../src/telemetry/telemetry-config.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const VARIABLE = /\b((?:THREADLINE|OTEL)_[A-Z0-9_]*[A-Z0-9])\b/g;

/** Every .js file under `dir`, following no symlinks out of it. */
function sourceFilesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFilesOf(join(dir, entry.name)) : entry.name.endsWith('.js') ? [join(dir, entry.name)] : [],
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** Every variable named in src/ (as test/docs.test.ts finds them), by file. */
const namedIn = new Map(sourceFiles(join(ROOT, 'src')).map((file) => [file, new Set([...readFileSync(file, 'utf8').matchAll(VARIABLE)].map((m) => m[1]!))]));
const sourceVariables = new Set([...namedIn.values()].flatMap((names) => [...names]));

/** Standard variables threadline does not read, named in a setting's description to say so. */
const NOT_READ = ['OTEL_METRIC_EXPORT_TIMEOUT', 'OTEL_LOG_LEVEL'];

describe('the settings table', () => {
  it('has every variable the source names, but the session ones and those it says it does not read', () => {
    const missing = [...sourceVariables].filter(
      (name) => !Object.hasOwn(SETTINGS, name) && !Object.hasOwn(SESSION_ENV, name) && !NOT_READ.includes(name),
    );
    expect(missing).toEqual([]);
  });

  it.each(NOT_READ)('says %s is not read, in a description, and nothing reads it', (name) => {
    const descriptions = SETTING_NAMES.map((setting) => (SETTINGS[setting] as Setting).description);
    expect(descriptions.some((text) => text.includes(`\`${name}\` is not read`))).toBe(true);
    const readers = [...namedIn].filter(([file, names]) => names.has(name) && !file.endsWith('/src/config/settings.ts'));
    expect(readers.map(([file]) => file)).toEqual([]);
  });

  it('says the exporter variables take one value: a comma list, as the SDK would take, is refused', () => {
    for (const name of ['OTEL_TRACES_EXPORTER', 'OTEL_METRICS_EXPORTER'] as const) {
      expect(SETTINGS[name].description).toContain('one value, not a comma-separated list');
      expect(checkConfiguration({ [name]: 'otlp,console' }).map((error) => error.variable)).toEqual([name]);
    }
  });

  it('puts figures in descriptions, not in comments: a comment in the table says why in words', () => {
    const comments = readFileSync(join(ROOT, 'src/config/settings.ts'), 'utf8').match(/^\s*\/\/.*$/gm) ?? [];
    expect(comments.filter((comment) => /\d/.test(comment))).toEqual([]);
  });

  it('has no setting that nothing outside src/config reads (the SDK reads those it marks readBySdk)', () => {
    const readers = [...namedIn].filter(([file]) => !file.includes('/src/config/'));
    const unread = SETTING_NAMES.filter(
      (name) =>
        !['PORT', 'HOST'].includes(name) &&
        (SETTINGS[name] as Setting).readBySdk !== true &&
        !readers.some(([file, names]) => names.has(name) || readFileSync(file, 'utf8').includes(`'${name}'`)),
    );
    expect(unread).toEqual([]);
  });

  it('marks readBySdk only variables the installed OpenTelemetry SDK or its exporters read', () => {
    const sdkSource = sourceFilesOf(join(ROOT, 'node_modules/@opentelemetry'))
      .filter((file) => file.includes('/build/src/'))
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    // Per-signal variables are read through a template: OTEL_EXPORTER_OTLP_${signalIdentifier}_HEADERS.
    const readBySdk = (name: string) =>
      sdkSource.includes(`'${name}'`) || sdkSource.includes(`\`${name.replace(/^OTEL_EXPORTER_OTLP_(TRACES|METRICS|LOGS)_/, 'OTEL_EXPORTER_OTLP_${signalIdentifier}_')}\``);
    const marked = SETTING_NAMES.filter((name) => (SETTINGS[name] as Setting).readBySdk === true);
    expect(marked.length).toBeGreaterThan(30);
    expect(marked.filter((name) => !readBySdk(name))).toEqual([]);
  });

  it.each(SETTING_NAMES)('%s has a default within its range or choices, and a one-line description', (name) => {
    const setting: Setting = SETTINGS[name];
    expect(setting.description).toMatch(/^[^\n]{10,}$/);
    if (setting.kind === 'integer') {
      expect(setting.default).toBeGreaterThanOrEqual(setting.min);
      expect(setting.default).toBeLessThanOrEqual(setting.max);
    }
    if (setting.kind === 'choice') expect(setting.choices).toContain(setting.default);
  });

  it('marks the admins list as personal, and nothing else', () => {
    expect(SETTING_NAMES.filter((name) => (SETTINGS[name] as Setting).personal === true)).toEqual(['THREADLINE_ADMINS']);
  });

  it('marks the tokens, secrets, the HMAC key, the model API key, the Redis URL and the OTLP headers as secret, and nothing else', () => {
    const secrets = SETTING_NAMES.filter((name) => (SETTINGS[name] as Setting).secret === true);
    expect(secrets.sort()).toEqual(
      [
        'OTEL_EXPORTER_OTLP_HEADERS',
        'OTEL_EXPORTER_OTLP_LOGS_HEADERS',
        'OTEL_EXPORTER_OTLP_METRICS_HEADERS',
        'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
        'THREADLINE_ADMIN_TOKEN',
        'THREADLINE_DISCORD_BOT_TOKEN',
        'THREADLINE_LLM_API_KEY',
        'THREADLINE_MATTERMOST_TOKEN',
        'THREADLINE_MATRIX_ACCESS_TOKEN',
        'THREADLINE_REDIS_URL',
        'THREADLINE_SLACK_BOT_TOKEN',
        'THREADLINE_SLACK_SIGNING_SECRET',
        'THREADLINE_SPAN_HMAC_KEY',
        'THREADLINE_TELEGRAM_BOT_TOKEN',
        'THREADLINE_TELEGRAM_WEBHOOK_SECRET',
        'THREADLINE_WEBHOOK_TOKEN',
      ].sort(),
    );
  });
});

/** A value outside what the setting takes; undefined for free text, which its reader parses. */
function badValue(setting: Setting): string | undefined {
  switch (setting.kind) {
    case 'integer':
      return String(setting.max + 1);
    case 'flag':
      return 'yes';
    case 'choice':
      return 'no-such-choice';
    case 'url':
    case 'redis-url':
      return 'not a url';
    case 'text':
      return undefined;
  }
}

describe('the readers read through the table', () => {
  const refusable = SETTING_NAMES.filter((name) => badValue(SETTINGS[name]) !== undefined);
  /** Settings read only while another turns their signal on (the logs endpoint, with logs over OTLP). */
  const inUse: Partial<Record<SettingName, NodeJS.ProcessEnv>> = { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: { OTEL_LOGS_EXPORTER: 'otlp' } };

  it.each(refusable)('%s: a value outside the table is refused by a reader, naming it', (name) => {
    const env = { ...inUse[name], [name]: badValue(SETTINGS[name])! };
    const refusals = [() => readGatewayConfig(env), () => readTelemetryConfig(env)].flatMap((read) => {
      try {
        read();
        return [];
      } catch (error) {
        return [error];
      }
    });
    expect(refusals.length).toBeGreaterThan(0);
    for (const error of refusals) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(name);
    }
  });

  it.each(SETTING_NAMES.filter((name) => SETTINGS[name].kind === 'integer'))('%s: its bounds are taken, one past them refused', (name) => {
    const setting = SETTINGS[name] as Extract<Setting, { kind: 'integer' }>;
    // The headers timeout is also bounded by the request timeout; let that one be the largest.
    const base = { THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '300000' };
    expect(checkConfiguration({ ...base, [name]: String(setting.min) })).toEqual([]);
    expect(checkConfiguration({ ...base, [name]: String(setting.max) })).toEqual([]);
    if (setting.min > 0) expect(checkConfiguration({ ...base, [name]: String(setting.min - 1) }).map((e) => e.variable)).toEqual([name]);
  });

  it('gives every default from the table', () => {
    const gateway = readGatewayConfig({});
    const telemetry = readTelemetryConfig({});
    const defaults: Partial<Record<SettingName, unknown>> = {
      PORT: gateway.port,
      HOST: gateway.host,
      THREADLINE_DATA_DIR: gateway.dataDir,
      THREADLINE_CONCURRENCY: gateway.concurrency,
      THREADLINE_QUEUE_CAPACITY: gateway.queueCapacity,
      THREADLINE_DELIVERY_LEASE_MS: gateway.deliveryLeaseMs,
      THREADLINE_DEAD_LETTER_RETENTION_MS: gateway.deadLetterRetentionMs,
      THREADLINE_SHUTDOWN_TIMEOUT_MS: gateway.shutdownTimeoutMs,
      THREADLINE_HTTP_REQUEST_TIMEOUT_MS: gateway.http.requestTimeoutMs,
      THREADLINE_HTTP_HEADERS_TIMEOUT_MS: gateway.http.headersTimeoutMs,
      THREADLINE_HTTP_MAX_CONNECTIONS: gateway.http.maxConnections,
      OTEL_SERVICE_NAME: telemetry.serviceName,
      OTEL_TRACES_EXPORTER: telemetry.exporter,
      OTEL_METRICS_EXPORTER: telemetry.metrics.exporter,
      OTEL_EXPORTER_PROMETHEUS_PORT: telemetry.metrics.prometheusPort,
      OTEL_METRIC_EXPORT_INTERVAL: telemetry.metrics.exportIntervalMs,
      THREADLINE_TRACE_FILE_MAX_BYTES: telemetry.traceFileMaxBytes,
      THREADLINE_LOG_LEVEL: telemetry.logLevel,
      THREADLINE_BAGGAGE_KEYS: telemetry.outboundBaggage.keys.join(','),
    };
    for (const [name, value] of Object.entries(defaults)) expect(value, name).toBe(SETTINGS[name as SettingName].default);
  });
});

describe('the checks across settings stay', () => {
  const variablesOf = (env: NodeJS.ProcessEnv) => checkConfiguration(env).map((error) => error.variable);

  it('needs the Telegram webhook secret in webhook mode, not in polling mode', () => {
    expect(variablesOf({ THREADLINE_TELEGRAM_BOT_TOKEN: '1:x' })).toEqual(['THREADLINE_TELEGRAM_WEBHOOK_SECRET']);
    expect(variablesOf({ THREADLINE_TELEGRAM_BOT_TOKEN: '1:x', THREADLINE_TELEGRAM_MODE: 'polling' })).toEqual([]);
  });

  it('needs the Slack signing secret with a Slack token', () => {
    expect(variablesOf({ THREADLINE_SLACK_BOT_TOKEN: 'xoxb-1' })).toEqual(['THREADLINE_SLACK_SIGNING_SECRET']);
  });

  it('refuses an unauthenticated webhook off loopback unless allowed', () => {
    expect(variablesOf({ HOST: '0.0.0.0' })).toEqual(['THREADLINE_WEBHOOK_TOKEN']);
    expect(variablesOf({ HOST: '0.0.0.0', THREADLINE_ALLOW_UNAUTHENTICATED: '1' })).toEqual([]);
    expect(variablesOf({ HOST: '0.0.0.0', THREADLINE_WEBHOOK_TOKEN: 't' })).toEqual([]);
    expect(variablesOf({ HOST: '::1' })).toEqual([]);
  });

  it('keeps the headers timeout within the request timeout, and its default follows a lower one', () => {
    expect(variablesOf({ THREADLINE_HTTP_HEADERS_TIMEOUT_MS: '40000' })).toEqual(['THREADLINE_HTTP_HEADERS_TIMEOUT_MS']);
    expect(readGatewayConfig({ THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '5000' }).http.headersTimeoutMs).toBe(5000);
  });

  it('needs plain privacy to log names', () => {
    expect(variablesOf({ THREADLINE_LOG_NAMES: '1', THREADLINE_SPAN_PRIVACY: 'off' })).toEqual(['THREADLINE_LOG_NAMES']);
  });

  it('refuses what the span stamper refuses: a short HMAC key, chat names outside plain privacy', () => {
    const key = { THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: 'short' };
    expect(variablesOf(key)).toEqual(['THREADLINE_SPAN_HMAC_KEY']);
    expect(variablesOf({ THREADLINE_SPAN_PRIVACY: 'hmac' })).toEqual(['THREADLINE_SPAN_HMAC_KEY']);
    expect(variablesOf({ ...key, THREADLINE_SPAN_HMAC_KEY: 'k'.repeat(16), THREADLINE_SPAN_CHAT_NAME: '1' })).toEqual(['THREADLINE_SPAN_CHAT_NAME']);
    expect(variablesOf({ ...key, THREADLINE_SPAN_HMAC_KEY: 'k'.repeat(16) })).toEqual([]);
  });

  it('reports every bad setting at once, in table order', () => {
    expect(variablesOf({ THREADLINE_LOG_LEVEL: 'loud', PORT: 'x', OTEL_PROPAGATORS: 'xray' })).toEqual(['PORT', 'OTEL_PROPAGATORS', 'THREADLINE_LOG_LEVEL']);
  });
});

describe('several instances on Redis', () => {
  const variablesOf = (env: NodeJS.ProcessEnv) => checkConfiguration(env).map((error) => error.variable);
  const url = 'redis://:hunter2@cache.internal:6380/1';

  it('is off without THREADLINE_REDIS_URL, and reads the settings beside it when set', () => {
    expect(readGatewayConfig({}).redis).toBeUndefined();
    expect(readGatewayConfig({ THREADLINE_REDIS_URL: url }).redis).toEqual({
      url,
      prefix: 'threadline',
      workers: { turns: true, deliveries: true },
      instanceId: expect.stringMatching(/^[A-Za-z0-9._-]+-[0-9a-f]{8}$/),
      leaseMs: 30_000,
      checkEveryMs: 10_000,
      fsync: 'server',
    });
    const tuned = {
      THREADLINE_REDIS_URL: ` ${url} `,
      THREADLINE_REDIS_PREFIX: 'staging.bot-2',
      THREADLINE_INSTANCE_ID: 'gw-2',
      THREADLINE_INSTANCE_LEASE_MS: '5000',
      THREADLINE_REDIS_FSYNC: 'always',
    };
    expect(readGatewayConfig(tuned).redis).toMatchObject({ url, prefix: 'staging.bot-2', instanceId: 'gw-2', leaseMs: 5_000, fsync: 'always' });
  });

  it('names an instance by default after its host and data dir: the same across restarts, another for another data dir', () => {
    const idOf = (dataDir: string) => readGatewayConfig({ THREADLINE_REDIS_URL: url, THREADLINE_DATA_DIR: dataDir }).redis?.instanceId;
    expect(idOf('/srv/a')).toBe(idOf('/srv/a'));
    expect(idOf('/srv/a')).not.toBe(idOf('/srv/b'));
  });

  it.each(['a:b', 'with space', 'x'.repeat(65)])('refuses THREADLINE_INSTANCE_ID=%s', (instance) => {
    expect(variablesOf({ THREADLINE_INSTANCE_ID: instance })).toEqual(['THREADLINE_INSTANCE_ID']);
  });

  it.each([
    ['turns', { turns: true, deliveries: false }],
    ['deliveries', { turns: false, deliveries: true }],
    [' Deliveries , turns ', { turns: true, deliveries: true }],
    ['none', { turns: false, deliveries: false }],
  ])('THREADLINE_WORKERS=%s works %o', (workers, expected) => {
    expect(readGatewayConfig({ THREADLINE_REDIS_URL: url, THREADLINE_WORKERS: workers }).redis?.workers).toEqual(expected);
  });

  it.each(['turns,none', 'all', ',', 'turns,outbox'])('refuses THREADLINE_WORKERS=%s, even with Redis off', (workers) => {
    expect(variablesOf({ THREADLINE_WORKERS: workers })).toEqual(['THREADLINE_WORKERS']);
  });

  it.each(['a:b', 'with space', 'x'.repeat(65)])('refuses THREADLINE_REDIS_PREFIX=%s, which a key or queue name would split', (prefix) => {
    expect(variablesOf({ THREADLINE_REDIS_PREFIX: prefix })).toEqual(['THREADLINE_REDIS_PREFIX']);
  });

  it.each([
    ['http://:hunter2@cache.internal:6379', /must be a redis:\/\/ or rediss:\/\/ URL, not http:\/\//],
    ['cache.internal hunter2', /is not an absolute URL/],
  ])('refuses THREADLINE_REDIS_URL=%s without echoing it', (value, reason) => {
    const errors = checkConfiguration({ THREADLINE_REDIS_URL: value });
    expect(errors.map((error) => error.variable)).toEqual(['THREADLINE_REDIS_URL']);
    expect(errors[0]!.message).toMatch(reason);
    expect(errors[0]!.message).not.toContain('hunter2');
  });

  it('takes rediss:// (TLS)', () => {
    expect(readGatewayConfig({ THREADLINE_REDIS_URL: 'rediss://cache.internal' }).redis?.url).toBe('rediss://cache.internal');
  });

  it('is shown by threadline config with its password masked, and not at all when refused', () => {
    const shown = (env: NodeJS.ProcessEnv) => describeConfiguration(env).settings.find((setting) => setting.name === 'THREADLINE_REDIS_URL')!;
    expect(shown({ THREADLINE_REDIS_URL: url })).toMatchObject({ value: 'redis://:***@cache.internal:6380/1', source: 'environment', secret: true });
    expect(shown({})).toMatchObject({ value: undefined, source: 'default' });
    const refused = shown({ THREADLINE_REDIS_URL: 'http://:hunter2@cache.internal' });
    expect(refused.value).toBe('(invalid)');
    expect(JSON.stringify(refused)).not.toContain('hunter2');
  });
});

describe(CONFIGURATION_DOC_PATH, () => {
  const doc = readFileSync(join(ROOT, CONFIGURATION_DOC_PATH), 'utf8');

  it('is what the table generates (npm run docs:config)', () => {
    expect(doc).toBe(renderConfigurationDoc());
  });

  it.each([...sourceVariables])('names %s in backticks', (name) => {
    expect(doc).toContain(`\`${name}\``);
  });

  it.each(Object.keys(SESSION_ENV))('names the session variable %s', (name) => {
    expect(doc).toContain(`\`${name}\``);
  });
});

describe('src/version.ts', () => {
  it("equals package.json's version", async () => {
    const { VERSION } = await import('../../src/version.js');
    expect(VERSION).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});
