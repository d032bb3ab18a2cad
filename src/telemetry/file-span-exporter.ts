import { closeSync, createWriteStream, mkdirSync, openSync, readSync, renameSync, statSync, unlinkSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { diag, type Counter } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { traceFileLines } from './trace-file-lines.js';
import { traceFileSpansDropped } from './span-drop-counters.js';

export interface TraceFileLimits {
  /** No file grows past this size: the file is rotated before a line would take it past, and a batch larger than a file is split over lines. */
  readonly maxBytes: number;
  /** Files kept, this one included: `path`, `path.1` (the newest full one) … `path.<keep - 1>`. */
  readonly keep: number;
}

const NEWLINE = Buffer.from('\n');
const DEFAULT_LIMITS: TraceFileLimits = { maxBytes: 64 * 1024 * 1024, keep: 4 };

/**
 * Appends each exported batch to a file as one line of OTLP/JSON (an
 * ExportTraceServiceRequest): the default when no collector is configured, so `npm start`
 * needs no server and the file can be replayed into any OTLP receiver later. No file grows past
 * `maxBytes` (a larger batch is split over several lines) and only `keep` files are kept, so
 * spans take at most keep × maxBytes of disk. A span that alone is larger than a file is dropped,
 * counted and logged.
 */
export class FileSpanExporter implements SpanExporter {
  /** Spans larger than a whole file, dropped since start. */
  droppedSpans = 0;
  private stream: WriteStream | undefined;
  private size = 0;
  /** Streams rotated away, still finishing their writes. */
  private retiring: Promise<void> = Promise.resolve();
  /** Made at the first drop: a meter got before the SDK registers would be a no-op for good. */
  private dropCounter: Counter | undefined;

  constructor(
    readonly path: string,
    readonly limits: TraceFileLimits = DEFAULT_LIMITS,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    const { lines, dropped } = traceFileLines(spans, this.limits.maxBytes);
    if (dropped > 0) this.countDropped(dropped);
    let pending = lines.length;
    let failed = false;
    const settle = (error?: Error | null): void => {
      if (failed) return;
      if (error) {
        failed = true;
        resultCallback({ code: ExportResultCode.FAILED, error });
      } else if (--pending === 0) {
        resultCallback({ code: ExportResultCode.SUCCESS });
      }
    };
    if (pending === 0) {
      resultCallback({ code: ExportResultCode.SUCCESS });
      return;
    }
    for (const line of lines) {
      const length = line.length + 1; // and its newline
      let stream: WriteStream;
      try {
        stream = this.open();
        if (this.size > 0 && this.size + length > this.limits.maxBytes) stream = this.rotate();
      } catch (error) {
        settle(error as Error);
        return;
      }
      this.size += length;
      // Two writes in one writev: the batch is not copied to append its newline.
      stream.cork();
      stream.write(line);
      stream.write(NEWLINE, settle);
      stream.uncork();
    }
  }

  /** Spans too large for any file: counted (threadline.trace_file.spans_dropped) and said in the log. */
  private countDropped(count: number): void {
    this.droppedSpans += count;
    this.dropCounter ??= traceFileSpansDropped();
    this.dropCounter.add(count);
    diag.warn(
      `trace file: dropped ${count} span(s) each larger than THREADLINE_TRACE_FILE_MAX_BYTES (${this.limits.maxBytes} bytes) on its own; ${this.droppedSpans} since start`,
    );
  }

  async forceFlush(): Promise<void> {
    await this.retiring;
    const stream = this.stream;
    if (stream === undefined || stream.writableLength === 0) return;
    // 'drain' only follows a write that filled the buffer; an empty write's callback runs
    // after every write queued before it.
    await new Promise<void>((resolve) => stream.write(Buffer.alloc(0), () => resolve()));
  }

  async shutdown(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    await this.retiring;
    if (stream === undefined) return;
    await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
  }

  private open(): WriteStream {
    if (this.stream === undefined) {
      mkdirSync(dirname(this.path), { recursive: true });
      // Opened now, not when the stream gets to it: a rotation later in the same export must find and rename this very file.
      const stream = createWriteStream(this.path, { fd: openSync(this.path, 'a') });
      // The write callback reports the failure; unheard, the 'error' event would crash the
      // process. Drop the broken stream so the next export tries to open the file again.
      stream.on('error', () => {
        if (this.stream === stream) this.stream = undefined;
      });
      this.stream = stream;
      this.size = sizeOf(this.path);
      // A batch cut off by a crash: end its line, so the next one is not glued to it.
      if (this.size > 0 && !endsWithNewline(this.path, this.size)) {
        stream.write(NEWLINE);
        this.size += 1;
      }
    }
    return this.stream;
  }

  /** Shifts path → path.1 → … (the oldest is overwritten) and opens a new, empty file. */
  private rotate(): WriteStream {
    const full = this.stream!;
    this.stream = undefined;
    // Renaming an open file is safe: the writes still queued land in it under its new name.
    const ended = new Promise<void>((resolve) => full.end(() => resolve()));
    this.retiring = Promise.all([this.retiring, ended]).then(() => undefined);
    const { keep } = this.limits;
    if (keep <= 1) unlinkSync(this.path);
    for (let i = keep - 1; i >= 1; i--) {
      const from = i === 1 ? this.path : `${this.path}.${i - 1}`;
      try {
        renameSync(from, `${this.path}.${i}`);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    return this.open();
  }
}

/** Whether the file's last byte ends a line; a file that cannot be read counts as ending one (appending still may work). */
function endsWithNewline(path: string, size: number): boolean {
  const last = Buffer.alloc(1);
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    readSync(fd, last, 0, 1, size - 1);
  } catch {
    return true;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return last[0] === NEWLINE[0];
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
