import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * Appends each exported batch to a file as one line of OTLP/JSON (an
 * ExportTraceServiceRequest): the default when no collector is configured, so `npm start`
 * needs no server and the file can be replayed into any OTLP receiver later.
 */
export class FileSpanExporter implements SpanExporter {
  private stream: WriteStream | undefined;

  constructor(readonly path: string) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    let stream: WriteStream;
    try {
      stream = this.open();
    } catch (error) {
      resultCallback({ code: ExportResultCode.FAILED, error: error as Error });
      return;
    }
    const line = Buffer.concat([JsonTraceSerializer.serializeRequest(spans)!, Buffer.from('\n')]);
    stream.write(line, (error) => {
      resultCallback(error ? { code: ExportResultCode.FAILED, error } : { code: ExportResultCode.SUCCESS });
    });
  }

  forceFlush(): Promise<void> {
    const stream = this.stream;
    if (stream === undefined || stream.writableLength === 0) return Promise.resolve();
    // 'drain' only follows a write that filled the buffer; an empty write's callback runs
    // after every write queued before it.
    return new Promise((resolve) => stream.write(Buffer.alloc(0), () => resolve()));
  }

  shutdown(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    if (stream === undefined) return Promise.resolve();
    return new Promise((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
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
    }
    return this.stream;
  }
}
