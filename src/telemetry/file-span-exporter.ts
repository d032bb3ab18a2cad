import { closeSync, createWriteStream, mkdirSync, openSync, readSync, renameSync, statSync, unlinkSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

export interface TraceFileLimits {
  /** The file is rotated before a batch would take it past this size (a larger batch gets a file of its own). */
  readonly maxBytes: number;
  /** Files kept, this one included: `path`, `path.1` (the newest full one) … `path.<keep - 1>`. */
  readonly keep: number;
}

const NEWLINE = Buffer.from('\n');
const DEFAULT_LIMITS: TraceFileLimits = { maxBytes: 64 * 1024 * 1024, keep: 4 };

/**
 * Appends each exported batch to a file as one line of OTLP/JSON (an
 * ExportTraceServiceRequest): the default when no collector is configured, so `npm start`
 * needs no server and the file can be replayed into any OTLP receiver later. The file is
 * rotated at a size and only `keep` files are kept, so spans never fill the disk.
 */
export class FileSpanExporter implements SpanExporter {
  private stream: WriteStream | undefined;
  private size = 0;
  /** Streams rotated away, still finishing their writes. */
  private retiring: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    readonly limits: TraceFileLimits = DEFAULT_LIMITS,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    const request = JsonTraceSerializer.serializeRequest(spans)!;
    const length = request.length + 1; // and its newline
    let stream: WriteStream;
    try {
      stream = this.open();
      if (this.size > 0 && this.size + length > this.limits.maxBytes) stream = this.rotate();
    } catch (error) {
      resultCallback({ code: ExportResultCode.FAILED, error: error as Error });
      return;
    }
    this.size += length;
    // Two writes in one writev: the batch is not copied to append its newline.
    stream.cork();
    stream.write(request);
    stream.write(NEWLINE, (error) => {
      resultCallback(error ? { code: ExportResultCode.FAILED, error } : { code: ExportResultCode.SUCCESS });
    });
    stream.uncork();
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
      const stream = createWriteStream(this.path, { flags: 'a' });
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
