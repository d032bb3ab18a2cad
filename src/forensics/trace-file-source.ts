/**
 * The local trace file as a trace store: `traces.jsonl` and its rotated files, one OTLP/JSON
 * ExportTraceServiceRequest per line (see src/telemetry/file-span-exporter.ts). Files are up
 * to 64 MiB each, so they are streamed line by line and a search keeps per-trace summaries,
 * then reads back only the spans of the traces it returns. A line longer than `maxLineBytes`
 * is skipped and said, never read into memory.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { messageOf, ThreadlineError } from '../errors.js';
import { FORENSIC_SPAN } from '../telemetry/forensic-names.js';
import { byteSize } from '../text/byte-size.js';
import { boundedLines, type BoundedLine } from './bounded-lines.js';
import { spansFromOtlpJson, TraceDocumentError } from './otlp-json.js';
import { normalTraceId } from './trace-store-search.js';
import type { StoredSpan, StoredTrace } from './trace-model.js';
import type { TraceQuery, TraceSource } from './trace-source.js';

/** One file opened for reading, fixed at the size it had when opened. */
interface OpenTraceFile {
  readonly name: string;
  readonly handle: FileHandle;
  readonly size: number;
}

export interface TraceFileSourceOptions {
  /** A longer line is skipped (and said); DEFAULT_MAX_LINE_BYTES unless given. */
  readonly maxLineBytes?: number;
}

/** The exporter's default file cap: it writes no line longer than the cap of its file. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;
/** Past this a line is never read, whatever is asked: a JavaScript string holds about 512 MiB, and parsing takes several times the line. */
export const MAX_LINE_BYTES = 256 * 1024 * 1024;

/** What a search remembers of a trace while streaming: a few fields, never its spans. */
interface TraceSummary {
  earliestMs: number;
  hasError: boolean;
  matches: boolean;
}

/** A trace id as the gateway's exporter writes it into a line. */
const TRACE_ID_IN_LINE = /"traceId":"([0-9a-f]{32})"/g;

/** Lines a read skipped, by `<file> line <n>`: said once however many passes met them. */
interface SkippedLines {
  /** Not JSON: batches cut off by a crash. */
  readonly cut: Set<string>;
  /** Longer than the limit, with their length in bytes. */
  readonly tooLong: Map<string, number>;
}

/** Reads traces from the gateway's trace file and its rotated files (newest first). */
export class TraceFileSource implements TraceSource {
  readonly description: string;
  readonly maxLineBytes: number;

  private readonly skipped: SkippedLines = { cut: new Set(), tooLong: new Map() };

  constructor(
    readonly path: string,
    options: TraceFileSourceOptions = {},
  ) {
    this.description = `trace file ${path}`;
    this.maxLineBytes = Math.min(MAX_LINE_BYTES, Math.max(1, options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES));
  }

  warnings(): string[] {
    const warnings: string[] = [];
    const { cut, tooLong } = this.skipped;
    if (cut.size > 0) warnings.push(`skipped ${cut.size} line(s) that are not JSON, batches cut off by a crash: ${[...cut].slice(0, 5).join(', ')}`);
    if (tooLong.size > 0) {
      const lines = [...tooLong].slice(0, 5).map(([where, bytes]) => `${where} (${bytes} bytes)`);
      warnings.push(
        `skipped ${tooLong.size} line(s) longer than ${byteSize(this.maxLineBytes)}, the longest a trace-file line is read ` +
          `(THREADLINE_TRACE_FILE_MAX_BYTES, at most ${byteSize(MAX_LINE_BYTES)}); their spans were not examined: ${lines.join(', ')}`,
      );
    }
    return warnings;
  }

  async search(query: TraceQuery): Promise<StoredTrace[]> {
    const inQuery = (span: StoredSpan): boolean =>
      span.startMs >= query.since &&
      span.startMs <= query.until &&
      (span.service === undefined || span.service === query.service);
    return this.withFiles(async (files) => {
      // Pass 1: which traces match, and how they sort; the spans themselves are not kept.
      const summaries = new Map<string, TraceSummary>();
      for await (const spans of batches(files, this.maxLineBytes, this.skipped)) {
        for (const span of spans) {
          if (!inQuery(span)) continue;
          let summary = summaries.get(span.traceId);
          if (summary === undefined) {
            summaries.set(span.traceId, (summary = { earliestMs: span.startMs, hasError: false, matches: false }));
          }
          summary.earliestMs = Math.min(summary.earliestMs, span.startMs);
          summary.hasError ||= span.status === 'error';
          summary.matches ||= spanMatches(span, query);
        }
      }
      const chosen = [...summaries]
        .filter(([, summary]) => summary.matches)
        .sort(([idA, a], [idB, b]) => Number(b.hasError) - Number(a.hasError) || b.earliestMs - a.earliestMs || idA.localeCompare(idB))
        .slice(0, Math.max(0, query.limit))
        .map(([traceId]) => traceId);
      if (chosen.length === 0) return [];

      // Pass 2: the spans of the chosen traces only; a line naming none of them is not parsed.
      const spansByTrace = new Map<string, StoredSpan[]>(chosen.map((traceId) => [traceId, []]));
      const wanted = new Set(chosen);
      // One pass over the line's ids, not one search of the line per chosen trace.
      const mentionsChosen = (line: string): boolean => {
        for (const match of line.matchAll(TRACE_ID_IN_LINE)) if (wanted.has(match[1]!)) return true;
        return false;
      };
      for await (const spans of batches(files, this.maxLineBytes, this.skipped, mentionsChosen)) {
        for (const span of spans) if (inQuery(span)) spansByTrace.get(span.traceId)?.push(span);
      }
      return chosen.map((traceId) => ({ traceId, spans: byStart(spansByTrace.get(traceId)!) }));
    });
  }

  async get(traceId: string): Promise<StoredTrace | undefined> {
    const id = normalTraceId(traceId);
    if (id === undefined) throw new ThreadlineError('TL_TRACE_SOURCE', `"${traceId.slice(0, 64)}" is not a trace id (up to 32 hex digits).`);
    return this.withFiles(async (files) => {
      const spans: StoredSpan[] = [];
      // The file holds ids in hex: a line without the id as text holds none of its spans.
      for await (const batch of batches(files, this.maxLineBytes, this.skipped, (line) => line.includes(id))) {
        for (const span of batch) if (span.traceId === id) spans.push(span);
      }
      return spans.length === 0 ? undefined : { traceId: id, spans: byStart(spans) };
    });
  }

  link(): string | undefined {
    return undefined;
  }

  /** Opens the files once for both passes, so a rotation in between moves nothing under them. */
  private async withFiles<T>(read: (files: readonly OpenTraceFile[]) => Promise<T>): Promise<T> {
    const files = await openTraceFiles(this.path);
    try {
      return await read(files);
    } finally {
      await Promise.all(files.map((file) => file.handle.close().catch(() => undefined)));
    }
  }
}

/** Does `span` make its trace one the query asks for? */
function spanMatches(span: StoredSpan, query: TraceQuery): boolean {
  if (query.purpose === 'conversation') {
    return (
      span.attributes['chat.id'] === query.chatId &&
      (query.threadId === undefined || span.attributes['chat.thread.id'] === query.threadId)
    );
  }
  if (span.name !== 'gateway.deliver' && span.name !== FORENSIC_SPAN) return false;
  if (query.chatId === undefined) return true;
  return (['', 'routing.destination.', 'routing.origin.'] as const).some(
    (prefix) =>
      span.attributes[`${prefix}chat.id`] === query.chatId &&
      (query.threadId === undefined || span.attributes[`${prefix}chat.thread.id`] === query.threadId),
  );
}

function byStart(spans: StoredSpan[]): StoredSpan[] {
  return spans.sort((a, b) => a.startMs - b.startMs);
}

/**
 * `path`, then `path.1`, `path.2` … up to the first number missing. A file seen twice (the
 * gateway rotated between two opens) is read once.
 */
async function openTraceFiles(path: string): Promise<OpenTraceFile[]> {
  const files: OpenTraceFile[] = [];
  const seen = new Set<string>();
  try {
    for (let index = 0; ; index++) {
      const name = index === 0 ? path : `${path}.${index}`;
      const file = await openTraceFile(name, index === 0);
      if (file === undefined) break;
      if (seen.has(file.identity)) {
        await file.handle.close();
        continue;
      }
      seen.add(file.identity);
      files.push(file);
    }
  } catch (error) {
    await Promise.all(files.map((file) => file.handle.close().catch(() => undefined)));
    throw error;
  }
  return files;
}

/** The file at `name`, or undefined when there is none (an error for the live file). */
async function openTraceFile(name: string, live: boolean): Promise<(OpenTraceFile & { identity: string }) | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(name, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable(name, error);
    if (!live) return undefined;
    throw new ThreadlineError(
      'TL_TRACE_SOURCE',
      `there is no trace file at ${name}: the gateway writes one there when OTEL_TRACES_EXPORTER=file (the default), ` +
        'to $THREADLINE_DATA_DIR/traces.jsonl or to THREADLINE_TRACE_FILE; give the path the gateway uses',
    );
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ThreadlineError('TL_TRACE_SOURCE', `${name} is not a file: give the path of the trace file (traces.jsonl)`);
    return { name, handle, size: stats.size, identity: `${stats.dev}:${stats.ino}` };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error instanceof ThreadlineError ? error : unreadable(name, error);
  }
}

/**
 * The spans of each line of `files`, in order; `mayHold` skips a line before it is parsed.
 * A last line without its newline is a batch still being written and is left out; a line
 * longer than `maxLineBytes` is skipped and remembered.
 */
async function* batches(
  files: readonly OpenTraceFile[],
  maxLineBytes: number,
  skipped: SkippedLines,
  mayHold: (line: string) => boolean = () => true,
): AsyncGenerator<StoredSpan[]> {
  for (const file of files) {
    // Up to the size seen at open: what the gateway appends meanwhile is for the next run.
    const lines = boundedLines(file.handle, { size: file.size, maxLineBytes });
    for (;;) {
      let next: IteratorResult<BoundedLine>;
      try {
        next = await lines.next();
      } catch (error) {
        throw unreadable(file.name, error);
      }
      if (next.done === true) break;
      const line = next.value;
      if (line.kind === 'too-long') skipped.tooLong.set(`${file.name} line ${line.number}`, line.bytes);
      else if (mayHold(line.text)) yield parseLine(file.name, line.number, line.text, skipped.cut);
    }
  }
}

function parseLine(name: string, lineNumber: number, line: string, cutLines: Set<string>): StoredSpan[] {
  if (line.trim() === '') return [];
  let document: unknown;
  try {
    document = JSON.parse(line);
  } catch {
    // A batch cut off by a crash (the exporter starts a new line after it): skipped, and said.
    cutLines.add(`${name} line ${lineNumber}`);
    return [];
  }
  try {
    return spansFromOtlpJson(document, `${name} line ${lineNumber}`);
  } catch (error) {
    if (error instanceof TraceDocumentError) throw notTraces(name, lineNumber, error.problem);
    throw error;
  }
}

function notTraces(name: string, lineNumber: number, problem: string): ThreadlineError {
  return new ThreadlineError(
    'TL_TRACE_SOURCE',
    `trace file ${name} line ${lineNumber} is not an OTLP/JSON batch of spans: ${problem}; ` +
      "is this a file the gateway's trace exporter wrote?",
  );
}

function unreadable(name: string, error: unknown): ThreadlineError {
  return new ThreadlineError('TL_TRACE_SOURCE', `cannot read the trace file ${name}: ${messageOf(error)}; check its permissions`, {
    cause: error,
  });
}
