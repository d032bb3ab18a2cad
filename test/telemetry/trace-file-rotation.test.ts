import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { diag } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it, vi } from 'vitest';
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

  it('splits a batch larger than maxBytes over lines and files, so no file passes maxBytes nor all of them keep × maxBytes', async () => {
    const line = await lineBytes();
    const limits = { maxBytes: 4 * line, keep: 3 };
    const path = join(tempDir(), `run-${++runs}`, 'traces.jsonl');
    const exporter = new FileSpanExporter(path, limits);
    // Batches of 10, 7 and 13 spans: each larger than a whole file.
    const written: string[] = [];
    for (const size of [10, 7, 13]) {
      const spans = Array.from({ length: size }, (_, index) => batch(written.length + index + 1)[0]!);
      written.push(...spans.map((span) => span.name));
      expect((await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve))).code).toBe(ExportResultCode.SUCCESS);
    }
    await exporter.shutdown();
    const files = [path, `${path}.1`, `${path}.2`];
    for (const file of files) expect(statSync(file).size).toBeLessThanOrEqual(limits.maxBytes);
    expect(files.reduce((total, file) => total + statSync(file).size, 0)).toBeLessThanOrEqual(limits.keep * limits.maxBytes);
    expect(existsSync(`${path}.3`)).toBe(false);
    // Nothing lost but what rotated out: the newest spans, in order, every one whole.
    const kept = [...files].reverse().flatMap(names);
    expect(kept).toEqual(written.slice(-kept.length));
    expect(kept.length).toBeGreaterThanOrEqual(limits.keep * 3);
    expect(exporter.droppedSpans).toBe(0);
  });

  it('drops and counts a span that alone is larger than maxBytes, and writes the rest of its batch', async () => {
    const line = await lineBytes();
    const path = join(tempDir(), `run-${++runs}`, 'traces.jsonl');
    const exporter = new FileSpanExporter(path, { maxBytes: 2 * line, keep: 2 });
    tracing.exporter.reset();
    tracing.tracer.startSpan('batch-01').end();
    tracing.tracer.startSpan('huge', { attributes: { padding: 'x'.repeat(4 * line) } }).end();
    tracing.tracer.startSpan('batch-02').end();
    const warn = vi.spyOn(diag, 'warn').mockImplementation(() => undefined);
    const result = await new Promise<ExportResult>((resolve) => exporter.export(tracing.spans(), resolve));
    await exporter.shutdown();
    expect(warn.mock.calls.map(([message]) => message)).toEqual([
      `trace file: dropped 1 span(s) each larger than THREADLINE_TRACE_FILE_MAX_BYTES (${2 * line} bytes) on its own; 1 since start`,
    ]);
    warn.mockRestore();
    expect(result.code).toBe(ExportResultCode.SUCCESS);
    expect(names(path)).toEqual(['batch-01', 'batch-02']);
    expect(statSync(path).size).toBeLessThanOrEqual(2 * line);
    expect(exporter.droppedSpans).toBe(1);
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
