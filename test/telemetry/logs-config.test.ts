import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { readLogsConfig } from '../../src/telemetry/logs-config.js';
import { readTelemetryConfig } from '../../src/telemetry/index.js';
import { thrownBy } from '../helpers/errors.js';

describe('OTEL_LOGS_EXPORTER, a list as NodeSDK reads it', () => {
  it.each([
    [undefined, 'none', []],
    ['otlp', 'otlp', []],
    [' OTLP ', 'otlp', []],
    ['otlp,otlp', 'otlp', []],
    // stdout already has every record: console is noted and left out.
    ['console', 'none', [/console/]],
    ['otlp, console', 'otlp', [/console/]],
    // As NodeSDK: none anywhere in the list turns the others off.
    ['otlp,none', 'none', [/none/]],
    ['none', 'none', []],
  ])('%j exports to %s', (value, exporter, warnings) => {
    const config = readLogsConfig(value === undefined ? {} : { OTEL_LOGS_EXPORTER: value });
    expect(config.exporter).toBe(exporter);
    expect(config.warnings).toEqual(warnings.map((warning) => expect.stringMatching(warning)));
  });

  it('does not stop start-up for a shared OTEL_LOGS_EXPORTER=console', () => {
    expect(readTelemetryConfig({ OTEL_LOGS_EXPORTER: 'console' }).logs.exporter).toBe('none');
  });

  it('refuses an exporter NodeSDK does not know either, naming the variable', () => {
    const error = thrownBy(() => readLogsConfig({ OTEL_LOGS_EXPORTER: 'otlp,jaeger' }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('OTEL_LOGS_EXPORTER');
    expect((error as ConfigError).message).toContain('jaeger');
  });
});
