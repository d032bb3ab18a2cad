import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { diag } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { installDiagLogger } from '../../src/telemetry/diag-logger.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { until } from '../helpers/gateway.js';

interface Record {
  level: number;
  component?: string;
  msg: string;
  err?: { message: string; stack: string };
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  diag.disable();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Installs a diag logger writing through a pino logger into the returned records. */
function capture(): Record[] {
  const records: Record[] = [];
  installDiagLogger(createLogger({ destination: { write: (line: string) => void records.push(JSON.parse(line) as Record) } }));
  return records;
}

describe('the OpenTelemetry diag logger', () => {
  it("writes the SDK's warnings and errors through pino at their level, without URL credentials, and nothing below warn", () => {
    const records = capture();
    diag.info('registered a global tracer provider');
    diag.debug('items to be sent');
    diag.warn('export to http://user:url-password@127.0.0.1:9/v1/traces?token=url-token failed', 503, {
      headers: { 'api-key': 'header-secret' },
    });
    diag.error('export failed', new Error('connect to http://user:url-password@127.0.0.1:9/?token=url-token refused'));
    expect(records.map((record) => [record.level, record.component])).toEqual([
      [40, 'opentelemetry'],
      [50, 'opentelemetry'],
    ]);
    expect(records[0]!.msg).toBe('export to http://127.0.0.1:9/v1/traces failed 503');
    expect(records[1]!.msg).toBe('export failed');
    expect(records[1]!.err?.message).toBe('connect to http://127.0.0.1:9/ refused');
    expect(JSON.stringify(records)).not.toMatch(/url-password|url-token|header-secret/);
  });

  it('logs a span export the collector refuses, which the SDK would otherwise drop', async () => {
    const records = capture();
    const collector: Server = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(400, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => collector.close(resolve)));
    const url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces?token=url-token`;
    const provider = new BasicTracerProvider({
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 10 })],
    });
    cleanups.push(() => provider.shutdown().catch(() => {}));
    provider.getTracer('diag-test').startSpan('refused').end();
    await until(() => records.length > 0);
    expect(records[0]).toMatchObject({ level: 50, component: 'opentelemetry', msg: expect.stringContaining('Bad Request') });
    expect(JSON.stringify(records)).not.toContain('url-token');
  });
});
