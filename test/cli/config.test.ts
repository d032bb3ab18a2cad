import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { SETTING_NAMES } from '../../src/config/settings.js';

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

interface Row {
  name: string;
  value: string | null;
  source: string;
  default: string;
  secret: boolean;
  personal: boolean;
  error?: string;
}

async function rows(env: NodeJS.ProcessEnv): Promise<Map<string, Row>> {
  const { out } = await run(['config', '--json'], env);
  return new Map((JSON.parse(out) as Row[]).map((row) => [row.name, row]));
}

const SECRETS = {
  THREADLINE_WEBHOOK_TOKEN: 'webhook-token-value',
  THREADLINE_TELEGRAM_BOT_TOKEN: '123456:telegram-token-value',
  THREADLINE_TELEGRAM_WEBHOOK_SECRET: 'telegram-secret-value',
  THREADLINE_SLACK_BOT_TOKEN: 'xoxb-slack-token-value',
  THREADLINE_SLACK_SIGNING_SECRET: 'slack-signing-value',
  THREADLINE_SPAN_HMAC_KEY: 'hmac-key-value-0123456789',
};

describe('threadline config', () => {
  it('shows every setting with its value, where it came from and its default', async () => {
    const { code, out, err } = await run(['config'], { PORT: '9000', THREADLINE_CONCURRENCY: ' 8 ' });
    expect({ code, err }).toEqual({ code: 0, err: '' });
    for (const name of SETTING_NAMES) expect(out).toMatch(new RegExp(`^  ${name} `, 'm'));
    expect(out).toMatch(/^ {2}PORT +9000 +environment \(default: 8787\)$/m);
    expect(out).toMatch(/^ {2}THREADLINE_CONCURRENCY +8 +environment \(default: 64\)$/m);
    expect(out).toMatch(/^ {2}HOST +127\.0\.0\.1 +default$/m);
    expect(out).toMatch(/^ {2}THREADLINE_WEBHOOK_TOKEN +unset +default$/m);
  });

  it('prints the same as JSON with --json, computed defaults worked out', async () => {
    const table = await rows({ THREADLINE_DATA_DIR: '/srv/tl', THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '4000', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
    expect(table.size).toBe(SETTING_NAMES.length);
    expect(table.get('PORT')).toEqual({ name: 'PORT', group: 'server', value: '8787', source: 'default', default: '8787', secret: false, personal: false });
    expect(table.get('THREADLINE_TRACE_FILE')).toMatchObject({ value: '/srv/tl/traces.jsonl', source: 'default' });
    expect(table.get('THREADLINE_HTTP_HEADERS_TIMEOUT_MS')).toMatchObject({ value: '4000', source: 'default' });
    expect(table.get('OTEL_TRACES_EXPORTER')).toMatchObject({ value: 'otlp', source: 'default' });
    expect(table.get('OTEL_METRICS_EXPORTER')).toMatchObject({ value: 'otlp', source: 'default' });
    expect(table.get('THREADLINE_BAGGAGE_KEYS')?.value).toBe('chat.platform,chat.id,chat.thread.id,session.id');
  });

  it('counts an empty baggage key list as set: it sends none', async () => {
    expect((await rows({ THREADLINE_BAGGAGE_KEYS: '' })).get('THREADLINE_BAGGAGE_KEYS')).toMatchObject({ value: '', source: 'environment' });
    expect((await rows({ PORT: '' })).get('PORT')).toMatchObject({ value: '8787', source: 'default' });
  });

  it('shows secrets as (set), never their value, and URLs without credentials', async () => {
    const env = { ...SECRETS, THREADLINE_WEBHOOK_DELIVERY_URL: 'https://user:url-password@127.0.0.1:9/hook?key=url-key' };
    for (const argv of [['config'], ['config', '--json']]) {
      const { code, out, err } = await run(argv, env);
      expect(code).toBe(0);
      for (const value of [...Object.values(SECRETS), 'url-password', 'url-key']) expect(out + err).not.toContain(value);
    }
    const table = await rows(env);
    for (const name of Object.keys(SECRETS)) expect(table.get(name)).toMatchObject({ value: '(set)', source: 'environment', secret: true });
    expect(table.get('THREADLINE_WEBHOOK_DELIVERY_URL')?.value).toBe('https://127.0.0.1:9/hook');
  });

  it('shows the OTLP exporter headers as (set), never their values, and the SDK settings as they are', async () => {
    const headers = {
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20otlp-general-secret',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=otlp-traces-secret',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'x-api-key=otlp-metrics-secret',
      OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'x-api-key=otlp-logs-secret',
    };
    const env = { ...headers, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01', OTEL_EXPORTER_OTLP_TIMEOUT: '5000' };
    for (const argv of [['config'], ['config', '--json']]) {
      const { code, out, err } = await run(argv, env);
      expect(code).toBe(0);
      for (const value of ['otlp-general-secret', 'otlp-traces-secret', 'otlp-metrics-secret', 'otlp-logs-secret', 'Bearer']) expect(out + err).not.toContain(value);
    }
    const table = await rows(env);
    for (const name of Object.keys(headers)) expect(table.get(name)).toMatchObject({ value: '(set)', source: 'environment', secret: true });
    expect(table.get('OTEL_TRACES_SAMPLER')).toMatchObject({ value: 'parentbased_traceidratio', source: 'environment' });
    expect(table.get('OTEL_TRACES_SAMPLER_ARG')).toMatchObject({ value: '0.01', source: 'environment' });
    // A signal's own setting, unset, shows the general one in force.
    expect(table.get('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT')).toMatchObject({ value: '5000', source: 'default' });
    expect(table.get('OTEL_LOGS_EXPORTER')).toMatchObject({ value: 'none', source: 'default' });
  });

  it('refuses an SDK setting outside the table, naming it, as the SDK alone would quietly ignore it', async () => {
    const { code, err } = await run(['config'], { OTEL_TRACES_SAMPLER: 'sometimes', OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' });
    expect(code).toBe(1);
    expect(err).toContain('OTEL_TRACES_SAMPLER');
    expect(err).toContain('OTEL_EXPORTER_OTLP_COMPRESSION');
    // The SDK compares compression as written: GZIP would quietly send uncompressed.
    const upper = await run(['config'], { OTEL_EXPORTER_OTLP_COMPRESSION: 'GZIP' });
    expect(upper.code).toBe(1);
    expect(upper.err).toContain('lower case');
    // threadline builds the sampler itself, and reads it as config shows it.
    const sampler = await run(['config'], { OTEL_TRACES_SAMPLER: 'ALWAYS_OFF' });
    expect(sampler.code).toBe(0);
    expect(sampler.out).toMatch(/^ {2}OTEL_TRACES_SAMPLER +always_off +environment/m);
  });

  it('shows the admins list as how many entries, never the user ids, valid or refused', async () => {
    const admins = { THREADLINE_ADMINS: 'telegram:4242424242,slack:U0ADMINID' };
    const text = await run(['config'], admins);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^ {2}THREADLINE_ADMINS +\(2 entries\) +environment \(default: unset \(nobody\)\)$/m);
    expect((await rows(admins)).get('THREADLINE_ADMINS')).toMatchObject({ value: '(2 entries)', source: 'environment', personal: true, secret: false });
    expect((await rows({ THREADLINE_ADMINS: '*' })).get('THREADLINE_ADMINS')?.value).toBe('*');
    const refused = await run(['config', '--json'], { THREADLINE_ADMINS: 'telegram:4242424242,not-an-entry' });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out).find((row: Row) => row.name === 'THREADLINE_ADMINS')).toMatchObject({ value: '(2 entries)' });
    expect(text.out + text.err + refused.out).not.toMatch(/4242424242|U0ADMINID/);
  });

  it('exits 1 and names every invalid setting, still showing the rest', async () => {
    const { code, out, err } = await run(['config'], { PORT: 'eighty', THREADLINE_LOG_LEVEL: 'loud', THREADLINE_SLACK_BOT_TOKEN: 'xoxb-1' });
    expect(code).toBe(1);
    expect(out).toMatch(/^ {2}PORT +eighty +environment \(default: 8787\) +INVALID$/m);
    expect(err.trimEnd().split('\n')).toEqual([
      'threadline: Invalid PORT: "eighty" is not a whole number from 0 to 65535 [TL_CONFIG_INVALID]',
      expect.stringMatching(/^threadline: Invalid THREADLINE_SLACK_SIGNING_SECRET: is required with a Slack bot token/),
      expect.stringMatching(/^threadline: Invalid THREADLINE_LOG_LEVEL: "loud" is not one of/),
    ]);
    expect((await rows({ PORT: 'eighty' })).get('PORT')?.error).toMatch(/whole number/);
  });

  it.each([
    ['a short HMAC key', { THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: 'too-short' }, 'THREADLINE_SPAN_HMAC_KEY'],
    ['chat names with hmac', { THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: 'k'.repeat(16), THREADLINE_SPAN_CHAT_NAME: '1' }, 'THREADLINE_SPAN_CHAT_NAME'],
  ])('exits 1 on %s, as start does', async (_case, env, variable) => {
    const { code, err } = await run(['config'], env);
    expect(code).toBe(1);
    expect(err).toMatch(new RegExp(`^threadline: Invalid ${variable}: .*\\[TL_CONFIG_INVALID\\]\n$`));
    expect(err).not.toContain('too-short');
  });

  it('does not echo a URL it cannot parse', async () => {
    const table = await rows({ THREADLINE_WEBHOOK_DELIVERY_URL: '//user:url-password@host' });
    expect(table.get('THREADLINE_WEBHOOK_DELIVERY_URL')).toMatchObject({ value: '(invalid)', error: expect.stringContaining('absolute URL') });
  });
});
