import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_ATTACHMENT_BYTES } from '../../../src/session/delivery.js';
import { ThreadlineError } from '../../../src/errors.js';
import { withSession } from '../../../src/session/index.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import { createTts } from '../../../src/tools/tts/index.js';
import type { TtsConfig } from '../../../src/tools/tools-config.js';
import { useTempDir } from '../../helpers/temp-dir.js';

const config: TtsConfig = { voice: 'en', maxChars: 1000 };
const tempDir = useTempDir('tts');
const call = () => ({ signal: new AbortController().signal });
const telegramChat = { platform: 'telegram', chatId: '42', chatType: 'dm' } as const;

/** A directory holding only the named programs (links to the real ones), to be the whole PATH. */
function pathWith(name: string, ...programs: string[]): string {
  const dir = join(tempDir(), name);
  mkdirSync(dir);
  for (const program of programs) symlinkSync(`/usr/bin/${program}`, join(dir, program));
  return dir;
}

async function failure(work: Promise<unknown>): Promise<ThreadlineError> {
  const error = await work.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ThreadlineError);
  return error as ThreadlineError;
}

describe('the tts tool', () => {
  it('speaks the text into a real Ogg/Opus voice note for the platform of the active session', async () => {
    const tts = createTts(config);
    const result = await withSession(telegramChat, () => tts.run({ text: 'Hello from threadline.' }, call()));
    expect(result.attachment).toMatchObject({ filename: 'voice.ogg', contentType: 'audio/ogg' });
    const audio = Buffer.from(result.attachment!.dataBase64, 'base64');
    expect(audio.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(audio.includes('OpusHead')).toBe(true);
    expect(audio.length).toBeGreaterThan(1_000);
    expect(result.text).toMatch(/^Voice note \(\d+\.\d s\)$/);
    expect(Number(/\((\S+) s\)/.exec(result.text)![1])).toBeGreaterThan(0.5);
  });

  it('is open to everyone, and its schema refuses an empty text or one over THREADLINE_TTS_MAX_CHARS', async () => {
    const tts = createTts({ voice: 'en', maxChars: 20 });
    expect(tts.adminOnly).toBe(false);
    // What the model is shown: the limit is in the schema, not only enforced.
    expect(JSON.parse(JSON.stringify(tts.input.jsonSchema))).toMatchObject({ properties: { text: { minLength: 1, maxLength: 20 } }, required: ['text'] });
    const authorize = async () => false;
    for (const text of ['', 'x'.repeat(21)]) {
      const error = await failure(executeTool(tts, { text }, { ...call(), authorize }));
      expect(error.code).toBe('TL_TOOL_INPUT');
    }
    expect((await failure(executeTool(tts, { words: 'hi' }, { ...call(), authorize }))).code).toBe('TL_TOOL_INPUT');
  });

  it('refuses a text over the limit, or only blanks, when called directly too', async () => {
    const tts = createTts({ voice: 'en', maxChars: 20 });
    const long = await failure(tts.run({ text: 'x'.repeat(21) }, call()));
    expect(long.code).toBe('TL_TOOL_INPUT');
    expect(long.message).toContain('THREADLINE_TTS_MAX_CHARS');
    expect((await failure(tts.run({ text: ' \n ' }, call()))).code).toBe('TL_TOOL_INPUT');
  });

  it('refuses speech that would not fit in its size limit (1 MiB unless lowered), killing the programs early', async () => {
    // About 45 s of speech: some 180 KB of Opus at 32 kbit/s, against a 64 KiB limit.
    const tts = createTts({ voice: 'en', maxChars: 10_000 }, { maxBytes: 64 * 1024 });
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(15);
    const error = await failure(tts.run({ text }, call()));
    expect(error.code).toBe('TL_TOOL_INPUT');
    expect(error.message).toContain('too long to speak in 64 KiB');
  });

  it('never makes a voice note over what a delivery may carry, whatever it is told', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(2);
    const result = await createTts(config, { maxBytes: 10 * MAX_ATTACHMENT_BYTES }).run({ text }, call());
    expect(Buffer.from(result.attachment!.dataBase64, 'base64').length).toBeLessThanOrEqual(MAX_ATTACHMENT_BYTES);
  });

  it('names espeak-ng and its Debian packages when the engine is missing, instead of making a file', async () => {
    const tts = createTts(config, { searchPath: pathWith('empty') });
    const error = await failure(tts.run({ text: 'hello' }, call()));
    expect(error.code).toBe('TL_TOOL_UNAVAILABLE');
    expect(error.message).toContain('espeak-ng');
    expect(error.message).toContain('apt-get install espeak-ng opus-tools');
  });

  it('names opusenc when only the encoder is missing', async () => {
    const tts = createTts(config, { searchPath: pathWith('espeak-only', 'espeak-ng') });
    const error = await failure(tts.run({ text: 'hello' }, call()));
    expect(error.code).toBe('TL_TOOL_UNAVAILABLE');
    expect(error.message).toContain('needs opusenc');
    expect(error.message).toContain('apt-get install espeak-ng opus-tools');
  });

  it('says the configured voice does not exist', async () => {
    const error = await failure(createTts({ voice: 'qq-made-up', maxChars: 100 }).run({ text: 'hello' }, call()));
    expect(error.code).toBe('TL_TOOL_UNAVAILABLE');
    expect(error.message).toContain('no voice "qq-made-up"');
    expect(error.message).toContain('espeak-ng --voices');
  });

  it('refuses a voice name that would read as an option', async () => {
    const error = await failure(createTts({ voice: '--stdout', maxChars: 100 }).run({ text: 'hello' }, call()));
    expect(error.code).toBe('TL_TOOL_UNAVAILABLE');
    expect(error.message).toContain('not an espeak-ng voice name');
  });

  it('hands the text to espeak-ng on stdin, never as an argument or through a shell, and gives it no secrets', async () => {
    const dir = pathWith('recording', 'opusenc');
    const record = join(tempDir(), 'espeak-call.txt');
    // A stand-in that writes down how it was called, then runs the real engine.
    writeFileSync(join(dir, 'espeak-ng'), `#!/bin/sh\n{ echo "ARGS: $*"; /usr/bin/env; } > '${record}'\nexec /usr/bin/espeak-ng "$@"\n`);
    chmodSync(join(dir, 'espeak-ng'), 0o755);
    const marker = join(tempDir(), 'injected');
    process.env['THREADLINE_TELEGRAM_TOKEN'] = 'secret-token-value';
    try {
      const text = `--version; touch ${marker} $(touch ${marker}) \`touch ${marker}\``;
      const result = await createTts(config, { searchPath: dir }).run({ text }, call());
      expect(Buffer.from(result.attachment!.dataBase64, 'base64').subarray(0, 4).toString('latin1')).toBe('OggS');
    } finally {
      delete process.env['THREADLINE_TELEGRAM_TOKEN'];
    }
    const recorded = readFileSync(record, 'utf8');
    expect(recorded).toContain('ARGS: -v en --stdout --stdin');
    expect(recorded).toContain(`PATH=${dir}`);
    expect(recorded).not.toContain('touch');
    expect(recorded).not.toContain('secret-token-value');
    expect(existsSync(marker)).toBe(false);
  });

  it('stops both programs when the call is stopped', async () => {
    const stop = new AbortController();
    const speaking = createTts({ voice: 'en', maxChars: 10_000 }).run({ text: 'A long text to speak. '.repeat(200) }, { signal: stop.signal });
    stop.abort(new Error('/stop'));
    const error = await failure(speaking);
    expect(error.code).toBe('TL_TOOL_FAILED');
    expect(error.message).toContain('stopped');
  });

  it('gives up after its timeout', async () => {
    const error = await failure(createTts({ voice: 'en', maxChars: 10_000 }, { timeoutMs: 1 }).run({ text: 'A long text to speak. '.repeat(200) }, call()));
    expect(error.code).toBe('TL_TOOL_FAILED');
    expect(error.message).toContain('took longer than');
  });

  it('makes the same Ogg/Opus file outside the gateway, without a session', async () => {
    const result = await createTts(config).run({ text: 'hi' }, call());
    expect(result.attachment).toMatchObject({ filename: 'voice.ogg', contentType: 'audio/ogg' });
  });
});
