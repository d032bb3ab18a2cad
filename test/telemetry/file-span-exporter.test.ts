import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { FileSpanExporter } from '../../src/telemetry/index.js';
import { otlpAttribute, readOtlpLines as lines, type OtlpLine } from '../helpers/otlp-file.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { createTestTracing } from '../helpers/tracing.js';

const tempDir = useTempDir('file-exporter');
const tracing = createTestTracing();
afterAll(() => tracing.provider.shutdown());
let fileCount = 0;

/** A fresh path in a directory that does not exist yet. */
function newPath(): string {
  return join(tempDir(), `run-${++fileCount}`, 'nested', 'traces.jsonl');
}

/** Ended spans named `names`, with an attribute each. */
function spans(...names: string[]): ReadableSpan[] {
  tracing.exporter.reset();
  for (const name of names) tracing.tracer.startSpan(name, { attributes: { 'chat.id': `chat-of-${name}` } }).end();
  return tracing.spans();
}

function exported(exporter: FileSpanExporter, batch: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(batch, resolve));
}

describe('FileSpanExporter', () => {
  it('creates the directory and writes one OTLP/JSON line per batch', async () => {
    const path = newPath();
    const exporter = new FileSpanExporter(path);
    const batch = spans('first', 'second');
    expect((await exported(exporter, batch)).code).toBe(ExportResultCode.SUCCESS);
    await exporter.shutdown();

    const [line, ...rest] = lines(path);
    expect(rest).toEqual([]);
    const scopeSpans = line!.resourceSpans[0]!.scopeSpans[0]!;
    expect(scopeSpans.scope.name).toBe('threadline-test');
    expect(scopeSpans.spans.map((span) => span.name).sort()).toEqual(['first', 'second']);
    const first = scopeSpans.spans.find((span) => span.name === 'first')!;
    expect(first.traceId).toBe(batch.find((span) => span.name === 'first')!.spanContext().traceId);
    expect(first.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(otlpAttribute(first, 'chat.id')).toBe('chat-of-first');
  });

  it('appends batches, also to a file an earlier run left', async () => {
    const path = newPath();
    const earlier = new FileSpanExporter(path);
    await exported(earlier, spans('earlier'));
    await earlier.shutdown();

    const exporter = new FileSpanExporter(path);
    await exported(exporter, spans('one'));
    await exported(exporter, spans('two'));
    await exporter.shutdown();
    expect(lines(path).map((line) => line.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name)).toEqual(['earlier', 'one', 'two']);
  });

  it('starts a new line after a batch an earlier run left cut off (a crash mid-write)', async () => {
    const path = newPath();
    const earlier = new FileSpanExporter(path);
    await exported(earlier, spans('earlier'));
    await earlier.shutdown();
    writeFileSync(path, '{"resourceSpans":[{"cut', { flag: 'a' });

    const exporter = new FileSpanExporter(path);
    await exported(exporter, spans('after'));
    await exporter.shutdown();
    const text = readFileSync(path, 'utf8').split('\n');
    expect(text[1]).toBe('{"resourceSpans":[{"cut');
    expect((JSON.parse(text[2]!) as OtlpLine).resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name).toBe('after');
  });

  it('flushes pending writes on shutdown', async () => {
    const path = newPath();
    const exporter = new FileSpanExporter(path);
    const results: ExportResult[] = [];
    exporter.export(spans('a'), (result) => results.push(result));
    exporter.export(spans('b'), (result) => results.push(result));
    await exporter.shutdown();
    expect(results.map((result) => result.code)).toEqual([ExportResultCode.SUCCESS, ExportResultCode.SUCCESS]);
    expect(lines(path)).toHaveLength(2);
  });

  it('resolves forceFlush once pending writes are on disk', async () => {
    const path = newPath();
    const exporter = new FileSpanExporter(path);
    exporter.export(spans('pending'), () => undefined);
    await exporter.forceFlush();
    expect(lines(path)).toHaveLength(1);
    await exporter.shutdown();
  });

  it('resolves forceFlush and shutdown before anything was exported', async () => {
    const path = newPath();
    const exporter = new FileSpanExporter(path);
    await exporter.forceFlush();
    await exporter.shutdown();
    expect(existsSync(path)).toBe(false);
  });

  it('reports FAILED, without crashing the process, when the file cannot be opened', async () => {
    const path = join(tempDir(), 'is-a-directory.jsonl');
    mkdirSync(path, { recursive: true });
    const exporter = new FileSpanExporter(path);
    const result = await exported(exporter, spans('lost'));
    expect(result.code).toBe(ExportResultCode.FAILED);
    expect(result.error).toBeInstanceOf(Error);
    expect((await exported(exporter, spans('lost again'))).code).toBe(ExportResultCode.FAILED);
    await exporter.shutdown();
  });

  it('reports FAILED when the directory cannot be created', async () => {
    const blocker = join(tempDir(), 'a-file');
    writeFileSync(blocker, '');
    const exporter = new FileSpanExporter(join(blocker, 'traces.jsonl'));
    const result = await exported(exporter, spans('lost'));
    expect(result.code).toBe(ExportResultCode.FAILED);
    await exporter.shutdown();
  });
});
