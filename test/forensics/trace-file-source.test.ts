import { linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT_CONTEXT, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFileSource } from '../../src/forensics/trace-file-source.js';
import type { TraceQuery } from '../../src/forensics/trace-source.js';
import { FileSpanExporter } from '../../src/telemetry/index.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('trace-file-source');
const SERVICE = 'threadline-gateway';
const T0 = 1_700_000_000_000;

/** A tracer whose spans carry `service` as service.name. */
function tracingFor(service: string) {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': service }), spanProcessors: [new SimpleSpanProcessor(memory)] });
  return { memory, provider, tracer: provider.getTracer('trace-file-source-test') };
}
const gateway = tracingFor(SERVICE);
const other = tracingFor('some-other-service');
afterAll(() => Promise.all([gateway.provider.shutdown(), other.provider.shutdown()]));

/** A trace id readable in failures: `n` repeated. */
function traceId(n: number): string {
  return n.toString(16).padStart(2, '0').repeat(16);
}

interface SpanPlan {
  readonly trace: number;
  readonly name?: string;
  /** ms after T0. */
  readonly at: number;
  readonly attributes?: Attributes;
  readonly error?: true;
  readonly tracing?: ReturnType<typeof tracingFor>;
}

/** Ended spans as planned, each in the trace `traceId(plan.trace)`. */
function spans(...plans: SpanPlan[]): ReadableSpan[] {
  return plans.map((plan) => {
    const tracing = plan.tracing ?? gateway;
    tracing.memory.reset();
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: traceId(plan.trace), spanId: 'ffffffffffffff01', traceFlags: 1 });
    const span = tracing.tracer.startSpan(plan.name ?? 'gateway.deliver', { startTime: T0 + plan.at, attributes: plan.attributes ?? {} }, parent);
    if (plan.error) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(T0 + plan.at + 1);
    return tracing.memory.getFinishedSpans()[0]!;
  });
}

/** One trace-file line holding `batch`, as FileSpanExporter writes it. */
function line(...batch: ReadableSpan[]): string {
  return `${new TextDecoder().decode(JsonTraceSerializer.serializeRequest(batch)!)}\n`;
}

let dirs = 0;
/** A fresh trace file path; `files[0]` is written to it, `files[i]` to `path.i` (undefined: none). */
function traceFiles(...files: (string | undefined)[]): string {
  const dir = join(tempDir(), `case-${++dirs}`);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'traces.jsonl');
  files.forEach((content, index) => {
    if (content !== undefined) writeFileSync(index === 0 ? path : `${path}.${index}`, content);
  });
  return path;
}

function query(overrides: Partial<TraceQuery> = {}): TraceQuery {
  return { service: SERVICE, since: T0, until: T0 + 1_000_000, purpose: 'deliveries', limit: 100, ...overrides };
}

async function searchedIds(path: string, overrides: Partial<TraceQuery> = {}): Promise<string[]> {
  return (await new TraceFileSource(path).search(query(overrides))).map((found) => found.traceId);
}

describe('TraceFileSource', () => {
  it('describes itself by its path and has no viewer link', () => {
    const source = new TraceFileSource('data/traces.jsonl');
    expect(source.description).toBe('trace file data/traces.jsonl');
    expect(source.link()).toBeUndefined();
  });

  it('says where the gateway writes the file when there is none', async () => {
    const path = join(tempDir(), 'nowhere', 'traces.jsonl');
    for (const attempt of [new TraceFileSource(path).search(query()), new TraceFileSource(path).get(traceId(1))]) {
      const error = assertThreadlineError(await rejectionOf(attempt), 'TL_TRACE_SOURCE');
      expect(error.message).toContain(`no trace file at ${path}`);
      expect(error.message).toContain('OTEL_TRACES_EXPORTER=file');
      expect(error.message).toContain('$THREADLINE_DATA_DIR/traces.jsonl');
      expect(error.message).toContain('THREADLINE_TRACE_FILE');
    }
  });

  it('says so when the path is a directory', async () => {
    const path = join(tempDir(), 'a-directory');
    mkdirSync(path, { recursive: true });
    const error = assertThreadlineError(await rejectionOf(new TraceFileSource(path).search(query())), 'TL_TRACE_SOURCE');
    expect(error.message).toContain(`${path} is not a file`);
  });

  it('reads the rotated files up to the first number missing', async () => {
    const path = traceFiles(line(...spans({ trace: 1, at: 40 })), line(...spans({ trace: 2, at: 30 })), line(...spans({ trace: 3, at: 20 })), undefined, line(...spans({ trace: 5, at: 10 })));
    expect(await searchedIds(path)).toEqual([traceId(1), traceId(2), traceId(3)]);
    expect(await new TraceFileSource(path).get(traceId(3))).toBeDefined();
    expect(await new TraceFileSource(path).get(traceId(5))).toBeUndefined();
  });

  it('reads the files FileSpanExporter rotated, and only those it kept', async () => {
    const path = join(tempDir(), 'exported', 'traces.jsonl');
    // A file holds one batch and not two, so each gets a file of its own; three are kept.
    const exporter = new FileSpanExporter(path, { maxBytes: Buffer.byteLength(line(...spans({ trace: 1, at: 1 }))) + 16, keep: 3 });
    for (let n = 1; n <= 5; n++) await new Promise((resolve) => exporter.export(spans({ trace: n, at: n }), resolve));
    await exporter.shutdown();
    const source = new TraceFileSource(path);
    expect(await searchedIds(path)).toEqual([traceId(5), traceId(4), traceId(3)]);
    expect((await source.get(traceId(4)))?.spans.map((span) => span.startMs)).toEqual([T0 + 4]);
    expect(await source.get(traceId(2))).toBeUndefined();
  });

  it('reads a file it reaches twice (rotated between two opens) once', async () => {
    const path = traceFiles(line(...spans({ trace: 1, at: 1 })));
    linkSync(path, `${path}.1`);
    expect((await new TraceFileSource(path).get(traceId(1)))?.spans).toHaveLength(1);
  });

  it('leaves out the last line of the live file while the gateway is still writing it', async () => {
    const whole = line(...spans({ trace: 1, at: 1 }));
    const partial = line(...spans({ trace: 2, at: 2 }));
    const path = traceFiles(whole + partial.slice(0, partial.length / 2));
    expect(await searchedIds(path)).toEqual([traceId(1)]);
    expect(await new TraceFileSource(path).get(traceId(2))).toBeUndefined();
  });

  it('reads a last line that ends with its newline', async () => {
    const path = traceFiles(line(...spans({ trace: 1, at: 1 })) + line(...spans({ trace: 2, at: 2 })));
    expect(await searchedIds(path)).toEqual([traceId(2), traceId(1)]);
  });

  it('skips a line that is not JSON (a batch cut off by a crash), reads the rest, and says which line', async () => {
    const good = line(...spans({ trace: 1, at: 1 }));
    const path = traceFiles(good, good + '{"resourceSpans":[\n' + good);
    const source = new TraceFileSource(path);
    expect(source.warnings()).toEqual([]);
    expect((await source.search(query())).map((trace) => trace.spans.length)).toEqual([3]);
    expect(source.warnings()).toEqual([`skipped 1 line(s) that are not JSON, batches cut off by a crash: ${path}.1 line 2`]);
  });

  it('skips a line longer than maxLineBytes without reading it whole, reads the rest, and says which line', async () => {
    const good = line(...spans({ trace: 1, at: 1 }));
    // A batch of its own, valid but padded past the limit: its trace must not be found.
    const huge = line(...spans({ trace: 2, at: 2, attributes: { padding: 'x'.repeat(3 * 1024 * 1024) } }));
    const path = traceFiles(good + huge + good);
    const source = new TraceFileSource(path, { maxLineBytes: 64 * 1024 });
    expect(source.maxLineBytes).toBe(64 * 1024);
    const found = await source.search(query());
    expect(found.map((trace) => [trace.traceId, trace.spans.length])).toEqual([[traceId(1), 2]]);
    expect(await source.get(traceId(2))).toBeUndefined();
    expect(source.warnings()).toEqual([
      `skipped 1 line(s) longer than 64 KiB, the longest a trace-file line is read (THREADLINE_TRACE_FILE_MAX_BYTES, at most 256 MiB); ` +
        `their spans were not examined: ${path} line 2 (${Buffer.byteLength(huge) - 1} bytes)`,
    ]);
  });

  it('reads lines of up to 64 MiB unless told, and never more than 256 MiB', () => {
    expect(new TraceFileSource('t').maxLineBytes).toBe(64 * 1024 * 1024);
    expect(new TraceFileSource('t', { maxLineBytes: 2 ** 40 }).maxLineBytes).toBe(256 * 1024 * 1024);
  });

  it('names the file and line of a JSON line that is not a batch of spans, and what is wrong', async () => {
    const good = line(...spans({ trace: 1, at: 1 }));
    const path = traceFiles(good + good + '{"data":[],"total":0}\n' + good);
    const error = assertThreadlineError(await rejectionOf(new TraceFileSource(path).search(query())), 'TL_TRACE_SOURCE');
    expect(error.message).toContain(`trace file ${path} line 3 is not an OTLP/JSON batch of spans: a JSON object without resourceSpans`);
  });

  it('keeps the spans in the window, of the service or of none', async () => {
    const noService = JSON.stringify({
      resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: traceId(4), spanId: '0000000000000004', name: 'gateway.deliver', startTimeUnixNano: `${(T0 + 60) * 1e6}` }] }] }],
    });
    const path = traceFiles(
      line(...spans({ trace: 1, at: -1 }, { trace: 1, at: 0 }, { trace: 1, at: 100 }, { trace: 1, at: 101 })) +
        line(...spans({ trace: 2, at: 50 }, { trace: 2, at: 51, name: 'gateway.message' })) +
        line(...spans({ trace: 3, at: 50, tracing: other })) +
        `${noService}\n`,
    );
    const found = await new TraceFileSource(path).search(query({ until: T0 + 100 }));
    expect(found.map((entry) => entry.traceId)).toEqual([traceId(4), traceId(2), traceId(1)]);
    const byId = new Map(found.map((entry) => [entry.traceId, entry.spans]));
    expect(byId.get(traceId(1))!.map((span) => span.startMs)).toEqual([T0, T0 + 100]);
    expect(byId.get(traceId(2))!.map((span) => span.name)).toEqual(['gateway.deliver', 'gateway.message']);
    expect(byId.get(traceId(4))![0]!.service).toBeUndefined();
  });

  it('keeps, for deliveries, traces holding a gateway.deliver span', async () => {
    const path = traceFiles(line(...spans({ trace: 1, at: 1, name: 'gateway.message', attributes: { 'chat.id': '42' } }), ...spans({ trace: 2, at: 2 })));
    expect(await searchedIds(path)).toEqual([traceId(2)]);
  });

  it('keeps, for a chat, deliveries whose chat.id, destination or origin is that chat (and thread)', async () => {
    const path = traceFiles(
      line(
        ...spans(
          { trace: 1, at: 1, attributes: { 'chat.id': '42', 'chat.thread.id': '7' } },
          { trace: 2, at: 2, attributes: { 'routing.destination.chat.id': '42', 'routing.destination.chat.thread.id': '8' } },
          { trace: 3, at: 3, attributes: { 'routing.origin.chat.id': '42', 'routing.origin.chat.thread.id': '7' } },
          { trace: 4, at: 4, attributes: { 'chat.id': '43', 'routing.destination.chat.id': '44' } },
          // chat 42, but on a span that is no delivery
          { trace: 5, at: 5, name: 'agent.turn', attributes: { 'chat.id': '42' } },
          // the chat on one attribute, the thread on another: no match
          { trace: 6, at: 6, attributes: { 'chat.id': '42', 'routing.origin.chat.thread.id': '7' } },
        ),
      ),
    );
    expect(await searchedIds(path, { chatId: '42' })).toEqual([traceId(6), traceId(3), traceId(2), traceId(1)]);
    expect(await searchedIds(path, { chatId: '42', threadId: '7' })).toEqual([traceId(3), traceId(1)]);
  });

  it('keeps, for a conversation, traces holding a span stamped with the chat (and thread)', async () => {
    const path = traceFiles(
      line(
        ...spans(
          { trace: 1, at: 1, name: 'gateway.message', attributes: { 'chat.id': 'h_a', 'chat.thread.id': 'h_t' } },
          { trace: 1, at: 2, name: 'agent.turn' },
          { trace: 2, at: 3, name: 'cron.run', attributes: { 'chat.id': 'h_a' } },
          { trace: 3, at: 4, attributes: { 'routing.destination.chat.id': 'h_a' } },
          { trace: 4, at: 5, name: 'gateway.message', attributes: { 'chat.id': 'h_b' } },
        ),
      ),
    );
    const conversation = { purpose: 'conversation', chatId: 'h_a' } as const;
    const found = await new TraceFileSource(path).search(query(conversation));
    expect(found.map((entry) => entry.traceId)).toEqual([traceId(2), traceId(1)]);
    expect(found[1]!.spans.map((span) => span.name)).toEqual(['gateway.message', 'agent.turn']);
    expect(await searchedIds(path, { ...conversation, threadId: 'h_t' })).toEqual([traceId(1)]);
  });

  it('returns at most limit traces: those with an error span first, then the newest', async () => {
    const path = traceFiles(
      line(...spans({ trace: 1, at: 10 }, { trace: 2, at: 20, error: true }, { trace: 3, at: 30 })),
      line(...spans({ trace: 4, at: 5, name: 'gateway.message', error: true }, { trace: 4, at: 6 }, { trace: 5, at: 40 })),
    );
    expect(await searchedIds(path)).toEqual([traceId(2), traceId(4), traceId(5), traceId(3), traceId(1)]);
    expect(await searchedIds(path, { limit: 3 })).toEqual([traceId(2), traceId(4), traceId(5)]);
    // Newest by the trace's earliest span, wherever it is written: trace 6 starts before trace 7, though it ends after it.
    const spread = traceFiles(line(...spans({ trace: 6, at: 90 }, { trace: 7, at: 2 })) + line(...spans({ trace: 6, at: 1 })));
    expect(await searchedIds(spread)).toEqual([traceId(7), traceId(6)]);
  });

  it('gets a trace whatever its time, across files, its spans in start order', async () => {
    const path = traceFiles(
      line(...spans({ trace: 1, at: 5_000_000, name: 'gateway.deliver' }, { trace: 2, at: 1 })),
      line(...spans({ trace: 1, at: -5_000_000, name: 'gateway.message', tracing: other })),
    );
    const found = await new TraceFileSource(path).get(traceId(1).toUpperCase());
    expect(found?.traceId).toBe(traceId(1));
    expect(found?.spans.map((span) => span.name)).toEqual(['gateway.message', 'gateway.deliver']);
    expect(found?.spans.map((span) => span.service)).toEqual(['some-other-service', SERVICE]);
  });

  it('gets a trace without parsing lines that do not mention it', async () => {
    const path = traceFiles(line(...spans({ trace: 1, at: 1 })) + 'not json at all\n' + line(...spans({ trace: 2, at: 2 })));
    const source = new TraceFileSource(path);
    expect((await source.get(traceId(2)))?.spans).toHaveLength(1);
    // The line that is not JSON was never parsed: nothing was skipped.
    expect(source.warnings()).toEqual([]);
    await source.search(query());
    expect(source.warnings()[0]).toContain(`${path} line 2`);
  });
});
