import { SeverityNumber } from '@opentelemetry/api-logs';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';
import { otlpLogStream } from '../../src/telemetry/otlp-log-stream.js';

const exporter = new InMemoryLogRecordExporter();
const provider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter })] });
afterAll(() => provider.shutdown());

function emitted(write: (stream: ReturnType<typeof otlpLogStream>) => void) {
  exporter.reset();
  write(otlpLogStream(provider.getLogger('test')));
  return exporter.getFinishedLogRecords();
}

describe('otlpLogStream', () => {
  it.each([
    ['trace', SeverityNumber.TRACE, 'TRACE'],
    ['debug', SeverityNumber.DEBUG, 'DEBUG'],
    ['info', SeverityNumber.INFO, 'INFO'],
    ['warn', SeverityNumber.WARN, 'WARN'],
    ['error', SeverityNumber.ERROR, 'ERROR'],
    ['fatal', SeverityNumber.FATAL, 'FATAL'],
  ] as const)('maps pino %s to severity %i %s', (level, number, text) => {
    const [record] = emitted((stream) => createLogger({ level: 'trace', destination: stream })[level]({ tenant: 'acme' }, `at ${level}`));
    expect(record).toMatchObject({ severityNumber: number, severityText: text, body: `at ${level}` });
    expect(record!.attributes).toMatchObject({ tenant: 'acme' });
    // The line's time, trace ids and level are parts of the record, not attributes.
    for (const field of ['level', 'time', 'msg', 'trace_id', 'span_id']) expect(record!.attributes).not.toHaveProperty(field);
  });

  it('keeps the time pino wrote', () => {
    const [record] = emitted((stream) => stream.write(`${JSON.stringify({ level: 30, time: 1_700_000_000_123, msg: 'then' })}\n`));
    expect(record!.hrTime).toEqual([1_700_000_000, 123_000_000]);
  });

  it('emits nothing for a line that is not JSON', () => {
    expect(emitted((stream) => stream.write('not json\n'))).toEqual([]);
  });
});
