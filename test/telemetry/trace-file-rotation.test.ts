import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { FileSpanExporter, createSpanExporter, readTelemetryConfig, type TraceFileLimits } from '../../src/telemetry/index.js';
import { thrownBy } from '../helpers/errors.js';
import { readOtlpSpans } from '../helpers/otlp-file.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { createTestTracing } from '../helpers/tracing.js';

const tempDir = useTempDir('trace-rotation');
const tracing = createTestTracing();
afterAll(() => tracing.provider.shutdown());
let runs = 0;

/** One batch of one span named `batch-NN`: every batch serializes to the same number of bytes. */
function batch(n: number): ReadableSpan[] {
  tracing.exporter.reset();
  tracing.tracer.startSpan(`batch-${String(n).padStart(2, '0')}`).end();
  return tracing.spans();
}

/** The size of one batch's line in the file. */
async function lineBytes(): Promise<number> {
  const path = join(tempDir(), `probe-${++runs}`, 'traces.jsonl');
  const exporter = new FileSpanExporter(path);
  exporter.export(batch(0), () => undefined);
  await exporter.shutdown();
  return statSync(path).size;
}

async function exportAll(limits: TraceFileLimits, batches: number, before?: (path: string) => void): Promise<string> {
  const path = join(tempDir(), `run-${++runs}`, 'traces.jsonl');
  before?.(path);
  const exporter = new FileSpanExporter(path, limits);
  for (let n = 1; n <= batches; n++) await new Promise((resolve) => exporter.export(batch(n), resolve));
  await exporter.shutdown();
  return path;
}

const names = (path: string) => readOtlpSpans(path).map((span) => span.name);

describe('FileSpanExporter rotation', () => {
  it('rotates before a batch would pass maxBytes and keeps `keep` files, newest first', async () => {
    const line = await lineBytes();
    const path = await exportAll({ maxBytes: 3 * line, keep: 3 }, 10);
    expect(names(path)).toEqual(['batch-10']);
    expect(names(`${path}.1`)).toEqual(['batch-07', 'batch-08', 'batch-09']);
    expect(names(`${path}.2`)).toEqual(['batch-04', 'batch-05', 'batch-06']);
    expect(existsSync(`${path}.3`)).toBe(false);
    for (const file of [path, `${path}.1`, `${path}.2`]) expect(statSync(file).size).toBeLessThanOrEqual(3 * line);
  });

  it('counts what an earlier run left in the file', async () => {
    const line = await lineBytes();
    const path = await exportAll({ maxBytes: 3 * line, keep: 2 }, 1, (file) => {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, 'x'.repeat(3 * line - 1) + '\n');
    });
    expect(names(path)).toEqual(['batch-01']);
    expect(readFileSync(`${path}.1`, 'utf8')).toMatch(/^x+\n$/);
  });

  it('with keep 1, starts the file afresh', async () => {
    const line = await lineBytes();
    const path = await exportAll({ maxBytes: 2 * line, keep: 1 }, 5);
    expect(names(path)).toEqual(['batch-05']);
    expect(existsSync(`${path}.1`)).toBe(false);
  });

  it('writes a batch larger than maxBytes whole, in a file of its own', async () => {
    const line = await lineBytes();
    const path = await exportAll({ maxBytes: Math.floor(line / 2), keep: 3 }, 3);
    expect(names(path)).toEqual(['batch-03']);
    expect(names(`${path}.1`)).toEqual(['batch-02']);
  });
});

describe('trace file limits from the environment', () => {
  const limitsOf = (env: NodeJS.ProcessEnv) => (createSpanExporter(readTelemetryConfig(env)) as FileSpanExporter).limits;

  it('default to 64 MiB and 4 files', () => {
    expect(limitsOf({ THREADLINE_TRACE_FILE: join(tempDir(), 'never.jsonl') })).toEqual({ maxBytes: 64 * 1024 * 1024, keep: 4 });
  });

  it('read THREADLINE_TRACE_FILE_MAX_BYTES and THREADLINE_TRACE_FILE_KEEP', () => {
    const env = { THREADLINE_TRACE_FILE: join(tempDir(), 'never.jsonl'), THREADLINE_TRACE_FILE_MAX_BYTES: '1048576', THREADLINE_TRACE_FILE_KEEP: '2' };
    expect(limitsOf(env)).toEqual({ maxBytes: 1048576, keep: 2 });
  });

  it.each([
    ['THREADLINE_TRACE_FILE_MAX_BYTES', '1000'],
    ['THREADLINE_TRACE_FILE_MAX_BYTES', '64MB'],
    ['THREADLINE_TRACE_FILE_KEEP', '0'],
    ['THREADLINE_REJECT_SPANS_PER_SECOND', '-1'],
  ])('refuses %s=%s', (variable, value) => {
    const error = thrownBy(() => readTelemetryConfig({ [variable]: value }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
  });
});
