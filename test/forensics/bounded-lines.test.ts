import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { boundedLines, type BoundedLine, type BoundedLinesOptions } from '../../src/forensics/bounded-lines.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('bounded-lines');
let files = 0;

/** Every line `content` gives, read with `options` (size: the whole content unless given). */
async function linesOf(content: string | Buffer, options: Partial<BoundedLinesOptions> = {}): Promise<BoundedLine[]> {
  const path = join(tempDir(), `file-${++files}`);
  writeFileSync(path, content);
  const handle = await open(path, 'r');
  try {
    const lines: BoundedLine[] = [];
    for await (const line of boundedLines(handle, { size: Buffer.byteLength(content), maxLineBytes: 100, ...options })) lines.push(line);
    return lines;
  } finally {
    await handle.close();
  }
}

const line = (number: number, text: string): BoundedLine => ({ kind: 'line', number, text });

describe('boundedLines', () => {
  it('gives each line with its number, across chunk boundaries, CRLF as LF, empty lines kept', async () => {
    for (const chunkBytes of [1, 2, 3, 7, 1024]) {
      expect(await linesOf('first\nsecond line\r\n\nthird\n', { chunkBytes })).toEqual([line(1, 'first'), line(2, 'second line'), line(3, ''), line(4, 'third')]);
    }
  });

  it('leaves out what follows the last newline: a line still being written', async () => {
    expect(await linesOf('whole\npart')).toEqual([line(1, 'whole')]);
    expect(await linesOf('no newline at all')).toEqual([]);
    expect(await linesOf('')).toEqual([]);
  });

  it('reads no further than size, the length the file had when it was opened', async () => {
    expect(await linesOf('one\ntwo\nthree\n', { size: 8 })).toEqual([line(1, 'one'), line(2, 'two')]);
  });

  it('keeps a line of exactly the limit and skips a longer one, with its number and length, then goes on', async () => {
    for (const chunkBytes of [1, 16, 1024]) {
      const lines = await linesOf(`${'a'.repeat(10)}\n${'b'.repeat(11)}\n${'c'.repeat(500)}\r\nlast\n`, { maxLineBytes: 10, chunkBytes });
      expect(lines).toEqual([
        line(1, 'a'.repeat(10)),
        { kind: 'too-long', number: 2, bytes: 11 },
        { kind: 'too-long', number: 3, bytes: 501 },
        line(4, 'last'),
      ]);
    }
  });

  it('decodes a multi-byte character split between two reads', async () => {
    expect(await linesOf('ä€😀\n', { chunkBytes: 1 })).toEqual([line(1, 'ä€😀')]);
  });
});
