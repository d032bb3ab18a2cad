import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { DEFAULT_OUTBOUND_POLICY, names } from '../../src/session/index.js';
import { readTelemetryConfig } from '../../src/telemetry/index.js';
import { thrownBy } from '../helpers/errors.js';

/** Asserts reading `env` fails with a ConfigError naming `variable`. */
function expectRefused(env: NodeJS.ProcessEnv, variable: string): ConfigError {
  const error = thrownBy(() => readTelemetryConfig(env));
  expect(error).toBeInstanceOf(ConfigError);
  const configError = error as ConfigError;
  expect(configError.code).toBe('TL_CONFIG_INVALID');
  expect(configError.variable).toBe(variable);
  expect(configError.message).toContain(variable);
  return configError;
}

describe('readTelemetryConfig defaults', () => {
  const config = readTelemetryConfig({});

  it('writes spans to ./data/traces.jsonl', () => {
    expect(config.exporter).toBe('file');
    expect(resolve(config.traceFile)).toBe(resolve('data', 'traces.jsonl'));
  });

  it('has the documented defaults for everything else', () => {
    expect(config).toMatchObject({
      serviceName: 'threadline',
      otlpProtocol: 'http/protobuf',
      attributes: { privacy: 'plain', includeChatName: false },
      outboundBaggage: { keys: DEFAULT_OUTBOUND_POLICY.keys, hosts: [] },
      inboundBaggage: false,
      logLevel: 'info',
      logNames: false,
    });
    expect(config.attributes).not.toHaveProperty('hmacKey');
  });
});

describe('readTelemetryConfig: where spans go', () => {
  it('puts the trace file in THREADLINE_DATA_DIR', () => {
    expect(readTelemetryConfig({ THREADLINE_DATA_DIR: '/var/lib/threadline' }).traceFile).toBe(join('/var/lib/threadline', 'traces.jsonl'));
  });

  it('lets THREADLINE_TRACE_FILE override the trace file', () => {
    expect(readTelemetryConfig({ THREADLINE_DATA_DIR: '/x', THREADLINE_TRACE_FILE: '/y/t.jsonl' }).traceFile).toBe('/y/t.jsonl');
  });

  it.each(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'])('switches to otlp when %s is set', (variable) => {
    expect(readTelemetryConfig({ [variable]: 'http://127.0.0.1:4318' }).exporter).toBe('otlp');
  });

  it('lets OTEL_TRACES_EXPORTER choose, whatever the endpoint', () => {
    expect(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).exporter).toBe('console');
    expect(readTelemetryConfig({ OTEL_TRACES_EXPORTER: ' None ' }).exporter).toBe('none');
    expect(readTelemetryConfig({ OTEL_TRACES_EXPORTER: 'file' }).exporter).toBe('file');
  });

  it.each(['true', 'TRUE', '1'])('turns tracing off with OTEL_SDK_DISABLED=%s, even with an endpoint', (value) => {
    expect(readTelemetryConfig({ OTEL_SDK_DISABLED: value, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'otlp' }).exporter).toBe(
      'none',
    );
  });

  it.each(['false', '0', ''])('keeps tracing on with OTEL_SDK_DISABLED=%j', (value) => {
    expect(readTelemetryConfig({ OTEL_SDK_DISABLED: value }).exporter).toBe('file');
  });

  it('takes the service name from OTEL_SERVICE_NAME', () => {
    expect(readTelemetryConfig({ OTEL_SERVICE_NAME: 'gateway-eu' }).serviceName).toBe('gateway-eu');
  });
});

describe('readTelemetryConfig: OTLP protocol', () => {
  it.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, 'http/json'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: ' HTTP/JSON ' }, 'http/json'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, 'http/protobuf'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, 'http/json'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: '' }, 'http/json'],
  ])('%j gives %s', (env, protocol) => {
    expect(readTelemetryConfig(env).otlpProtocol).toBe(protocol);
  });

  it.each(['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'])('takes grpc in %s', (variable) => {
    expect(readTelemetryConfig({ [variable]: 'grpc' }).otlpProtocol).toBe('grpc');
  });

  it('gives metrics their own protocol, else the general one', () => {
    expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).metrics.otlpProtocol).toBe('grpc');
    expect(
      readTelemetryConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json' }).metrics.otlpProtocol,
    ).toBe('http/json');
  });
});

describe('readTelemetryConfig refuses bad values, naming the variable', () => {
  it.each([
    ['OTEL_TRACES_EXPORTER', 'jaeger'],
    ['OTEL_TRACES_EXPORTER', 'zipkin,otlp'],
    ['OTEL_SDK_DISABLED', 'yes'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http'],
    ['THREADLINE_SPAN_PRIVACY', 'secret'],
    ['THREADLINE_SPAN_CHAT_NAME', 'on'],
    ['THREADLINE_LOG_LEVEL', 'verbose'],
    ['THREADLINE_LOG_NAMES', '2'],
    ['OTEL_METRICS_EXPORTER', 'statsd'],
    ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'udp'],
    ['OTEL_EXPORTER_PROMETHEUS_PORT', '70000'],
    ['OTEL_METRIC_EXPORT_INTERVAL', '10'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', 'many'],
    ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '0'],
    ['OTEL_PROPAGATORS', 'xray'],
  ])('%s=%s', (variable, value) => {
    expect(expectRefused({ [variable]: value }, variable).message).toContain(value);
  });
});

describe('readTelemetryConfig: span attributes and logs', () => {
  it('reads privacy, key and chat name', () => {
    expect(readTelemetryConfig({ THREADLINE_SPAN_PRIVACY: 'HMAC', THREADLINE_SPAN_HMAC_KEY: 'k'.repeat(16) }).attributes).toEqual({
      privacy: 'hmac',
      includeChatName: false,
      hmacKey: 'k'.repeat(16),
    });
    expect(readTelemetryConfig({ THREADLINE_SPAN_PRIVACY: 'off' }).attributes.privacy).toBe('off');
    expect(readTelemetryConfig({ THREADLINE_SPAN_CHAT_NAME: '1' }).attributes.includeChatName).toBe(true);
  });

  it('reads the log level and names flag', () => {
    const config = readTelemetryConfig({ THREADLINE_LOG_LEVEL: 'DEBUG', THREADLINE_LOG_NAMES: 'true' });
    expect(config.logLevel).toBe('debug');
    expect(config.logNames).toBe(true);
  });
});

describe('readTelemetryConfig: THREADLINE_BAGGAGE_KEYS', () => {
  it('reads a comma-separated list, trimming spaces', () => {
    expect(readTelemetryConfig({ THREADLINE_BAGGAGE_KEYS: ' chat.id , session.id,,user.id ' }).outboundBaggage.keys).toEqual([
      names.CHAT_ID,
      names.SESSION_ID,
      names.USER_ID,
    ]);
  });

  it('sends none when empty', () => {
    expect(readTelemetryConfig({ THREADLINE_BAGGAGE_KEYS: '' }).outboundBaggage.keys).toEqual([]);
  });

  it.each([names.CHAT_NAME, names.USER_NAME, names.MESSAGE_ID, 'tenant', 'Chat.Id'])('refuses %s as an outbound key', (key) => {
    expect(expectRefused({ THREADLINE_BAGGAGE_KEYS: `chat.id,${key}` }, 'THREADLINE_BAGGAGE_KEYS').message).toContain(key);
  });
});

describe('readTelemetryConfig: THREADLINE_BAGGAGE_HOSTS', () => {
  it('reads host rules in order, lowercasing hosts', () => {
    expect(
      readTelemetryConfig({ THREADLINE_BAGGAGE_HOSTS: 'API.example.com=chat.id,session.id; *.internal = chat.platform,chat.id;' }).outboundBaggage
        .hosts,
    ).toEqual([
      { host: 'api.example.com', keys: [names.CHAT_ID, names.SESSION_ID] },
      { host: '*.internal', keys: [names.CHAT_PLATFORM, names.CHAT_ID] },
    ]);
  });

  it('allows a rule that sends nothing', () => {
    expect(readTelemetryConfig({ THREADLINE_BAGGAGE_HOSTS: 'tracker.example.com=' }).outboundBaggage.hosts).toEqual([
      { host: 'tracker.example.com', keys: [] },
    ]);
  });

  it.each(['api.example.com', '=chat.id', 'api example.com=chat.id', 'https://api.example.com=chat.id', '**.example.com=chat.id', 'api.example.com=chat.name', 'a.com=user.name'])(
    'refuses %j',
    (rules) => {
      expectRefused({ THREADLINE_BAGGAGE_HOSTS: rules }, 'THREADLINE_BAGGAGE_HOSTS');
    },
  );
});

describe('readTelemetryConfig: THREADLINE_INBOUND_BAGGAGE', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['none', false],
    ['all', true],
    [' tenant , sampling.priority ', ['tenant', 'sampling.priority']],
  ])('%j gives %j', (value, expected) => {
    const env = value === undefined ? {} : { THREADLINE_INBOUND_BAGGAGE: value };
    expect(readTelemetryConfig(env).inboundBaggage).toEqual(expected);
  });
});

describe('readTelemetryConfig: metrics', () => {
  it('sends metrics nowhere by default, over OTLP once an endpoint is set', () => {
    expect(readTelemetryConfig({}).metrics).toEqual({
      exporter: 'none',
      otlpProtocol: 'http/protobuf',
      prometheusHost: '127.0.0.1',
      prometheusPort: 9464,
      exportIntervalMs: 60_000,
    });
    expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).metrics.exporter).toBe('otlp');
    expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://127.0.0.1:4318/v1/metrics' }).metrics.exporter).toBe('otlp');
  });

  it('reads the Prometheus endpoint and the export interval', () => {
    const metrics = readTelemetryConfig({
      OTEL_METRICS_EXPORTER: 'Prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '::1',
      OTEL_EXPORTER_PROMETHEUS_PORT: '9000',
      OTEL_METRIC_EXPORT_INTERVAL: '5000',
    }).metrics;
    expect(metrics).toMatchObject({ exporter: 'prometheus', prometheusHost: '::1', prometheusPort: 9000, exportIntervalMs: 5000 });
  });

  it('turns metrics off with OTEL_SDK_DISABLED, whatever the exporter', () => {
    expect(readTelemetryConfig({ OTEL_SDK_DISABLED: 'true', OTEL_METRICS_EXPORTER: 'prometheus' }).metrics.exporter).toBe('none');
  });
});

describe('readTelemetryConfig: OTEL_PROPAGATORS', () => {
  it.each([
    [undefined, ['tracecontext', 'baggage']],
    [' B3, tracecontext,b3 ', ['b3', 'tracecontext']],
    ['none', ['none']],
  ])('%j gives %j', (value, expected) => {
    expect(readTelemetryConfig(value === undefined ? {} : { OTEL_PROPAGATORS: value }).propagators).toEqual(expected);
  });

  it('refuses none with others', () => {
    expect(expectRefused({ OTEL_PROPAGATORS: 'none,b3' }, 'OTEL_PROPAGATORS').message).toContain('none');
  });
});

describe('readTelemetryConfig: OTLP endpoints', () => {
  it.each(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'])(
    'refuses a malformed %s without echoing it',
    (variable) => {
      const error = expectRefused({ [variable]: 'collector:4317?token=s3cret' }, variable);
      expect(error.message).not.toContain('s3cret');
    },
  );

  it('carries service.version from package.json', () => {
    expect(readTelemetryConfig({}).serviceVersion).toMatch(/^\d+\.\d+\.\d+/);
  });
});
