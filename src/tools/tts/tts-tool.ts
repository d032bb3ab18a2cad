import { Type } from 'typebox';
import { MAX_ATTACHMENT_BYTES } from '../../session/delivery.js';
import { ThreadlineError } from '../../errors.js';
import { sessionEnv } from '../../session/index.js';
import type { Tool, ToolCall, ToolResult } from '../tool.js';
import { defineTool } from '../define-tool.js';
import type { TtsConfig } from '../tools-config.js';
import { speak } from './speak.js';
import { oggOpusSeconds } from './ogg-duration.js';
import { voiceNoteAttachment } from './voice-note.js';

/** Beyond what a synthesis of THREADLINE_TTS_MAX_CHARS takes here (seconds), short of holding a turn for long. */
export const TTS_TIMEOUT_MS = 60_000;

/** What tests (and embedders) may change; production uses the defaults. */
export interface TtsOptions {
  /** How long espeak-ng and opusenc may take together. */
  readonly timeoutMs?: number;
  /** The PATH they are looked up in (default: this process's). */
  readonly searchPath?: string | undefined;
  /** The largest voice note (default MAX_ATTACHMENT_BYTES, what a delivery may carry). */
  readonly maxBytes?: number;
}

/**
 * The `tts` tool: speaks a text with espeak-ng and returns it as an Ogg/Opus voice note
 * attachment for the current platform (read from the active session). Anyone may call it.
 */
export function createTts(config: TtsConfig, options: TtsOptions = {}): Tool {
  const timeoutMs = options.timeoutMs ?? TTS_TIMEOUT_MS;
  const maxBytes = Math.min(options.maxBytes ?? MAX_ATTACHMENT_BYTES, MAX_ATTACHMENT_BYTES);
  const searchPath = 'searchPath' in options ? options.searchPath : process.env['PATH'];
  return defineTool({
    name: 'tts',
    description: `Speaks a text aloud and sends it to the chat as a voice note (at most ${config.maxChars} characters).`,
    input: Type.Object(
      { text: Type.String({ minLength: 1, maxLength: config.maxChars, description: 'What to say, as plain text.' }) },
      { additionalProperties: false },
    ),
    adminOnly: false,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    async run(args: Record<string, unknown>, call: ToolCall): Promise<ToolResult> {
      const text = checkedText(args['text'], config.maxChars);
      const audio = await speak(text, { voice: config.voice, maxBytes, timeoutMs, signal: call.signal, searchPath });
      // Read from the active session: the gateway runs each call inside the turn's.
      const platform = sessionEnv('THREADLINE_SESSION_PLATFORM');
      const seconds = oggOpusSeconds(audio);
      return {
        text: seconds === undefined ? 'Voice note' : `Voice note (${seconds.toFixed(1)} s)`,
        attachment: voiceNoteAttachment(audio, platform),
      };
    },
  });
}

/** The schema checks the call through executeTool; a direct caller gets the same answer here. */
function checkedText(value: unknown, maxChars: number): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ThreadlineError('TL_TOOL_INPUT', 'tts needs a text to speak');
  if (value.length > maxChars) {
    throw new ThreadlineError('TL_TOOL_INPUT', `tts speaks at most ${maxChars} characters (THREADLINE_TTS_MAX_CHARS); this text has ${value.length}`);
  }
  return value;
}
