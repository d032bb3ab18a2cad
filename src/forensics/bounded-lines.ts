/**
 * The lines of a file, each at most a given number of bytes: a longer line is never put
 * together (a JavaScript string holds at most about 512 MiB, and readline dies with an uncaught
 * RangeError past it), it is skipped and said, with its number and length.
 */
import type { FileHandle } from 'node:fs/promises';

/** A whole line (1-based number, without its newline), or one longer than the limit, skipped. */
export type BoundedLine =
  | { readonly kind: 'line'; readonly number: number; readonly text: string }
  | { readonly kind: 'too-long'; readonly number: number; readonly bytes: number };

export interface BoundedLinesOptions {
  /** Bytes read from the file: 0 up to this (what was there when it was opened). */
  readonly size: number;
  /** A line longer than this (its newline left out) is skipped, never held in memory. */
  readonly maxLineBytes: number;
  /** Bytes read at a time; 1 MiB unless given. */
  readonly chunkBytes?: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const DEFAULT_CHUNK_BYTES = 1024 * 1024;

/**
 * Each line of `handle` ended by a newline before `size`, in order. Bytes after the last
 * newline are a line still being written, or cut off: left out.
 */
export async function* boundedLines(handle: FileHandle, options: BoundedLinesOptions): AsyncGenerator<BoundedLine> {
  const chunk = Buffer.allocUnsafe(Math.min(options.chunkBytes ?? DEFAULT_CHUNK_BYTES, Math.max(1, options.size)));
  /** The pieces of the line begun so far (none once it is known to be too long). */
  let pieces: Buffer[] = [];
  let lineBytes = 0;
  let tooLong = false;
  let number = 0;
  for (let position = 0; position < options.size; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, options.size - position), position);
    if (bytesRead === 0) break; // the file shrank (truncated under us): what is left is unknown
    position += bytesRead;
    let start = 0;
    while (start < bytesRead) {
      const end = chunk.indexOf(NEWLINE, start);
      const stop = end === -1 || end >= bytesRead ? bytesRead : end;
      lineBytes += stop - start;
      if (!tooLong && lineBytes > options.maxLineBytes) {
        tooLong = true;
        pieces = [];
      }
      // Copied: the chunk is read into again.
      if (!tooLong && stop > start) pieces.push(Buffer.from(chunk.subarray(start, stop)));
      if (stop === bytesRead) break;
      number++;
      if (tooLong) {
        yield { kind: 'too-long', number, bytes: lineBytes };
      } else {
        const line = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, lineBytes);
        // A CRLF line ends as a LF one.
        const length = line.length > 0 && line[line.length - 1] === CARRIAGE_RETURN ? line.length - 1 : line.length;
        yield { kind: 'line', number, text: line.toString('utf8', 0, length) };
      }
      pieces = [];
      lineBytes = 0;
      tooLong = false;
      start = stop + 1;
    }
  }
}
