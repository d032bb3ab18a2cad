export { createTts, TTS_TIMEOUT_MS, type TtsOptions } from './tts-tool.js';
