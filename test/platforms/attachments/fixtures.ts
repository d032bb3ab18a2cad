import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { Attachment } from '../../../src/session/delivery.js';
import type { OutboundMessage } from '../../../src/platforms/platform.js';

/** Every byte value, then a pseudo-random tail: what a text-minded transport would mangle. */
export function binaryFile(size = 200_000): Buffer {
  const bytes = Buffer.alloc(size);
  let seed = 7;
  for (let i = 0; i < size; i++) {
    seed = (seed * 1_103_515_245 + 12_345) >>> 0;
    bytes[i] = i < 256 ? i : seed >>> 24;
  }
  return bytes;
}

export function attachmentOf(bytes: Buffer, contentType = 'audio/ogg', filename = 'voice.ogg'): Attachment {
  return { filename, contentType, dataBase64: bytes.toString('base64') };
}

/** A reply in a chat and thread, carrying `attachment`. */
export function outbound(platform: string, chatId: string, threadId: string | undefined, extra: Partial<OutboundMessage>): OutboundMessage {
  return {
    id: `d/${platform}/1`,
    kind: 'reply',
    destination: { platform, chatId, ...(threadId === undefined ? {} : { threadId }) },
    text: 'Voice note (1.2 s)',
    traceId: 'a'.repeat(32),
    ...extra,
  };
}

/** A logger whose lines are kept, to check what reaches the log. */
export function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

export const silentLogger = pino({ level: 'silent' });
export const neverAborted: AbortSignal = new AbortController().signal;
