import type { Attachment } from '../../session/delivery.js';

/** How a platform receives speech: every platform here plays Ogg/Opus, Telegram as a voice note. */
interface VoiceNoteFormat {
  readonly filename: string;
  readonly contentType: string;
}

/** Telegram shows `audio/ogg` (Opus) as a voice note, Slack as an audio file, the webhook passes the bytes on. */
const OGG_OPUS: VoiceNoteFormat = { filename: 'voice.ogg', contentType: 'audio/ogg' };

const FORMATS: Readonly<Record<string, VoiceNoteFormat>> = {
  telegram: OGG_OPUS,
  slack: OGG_OPUS,
  discord: OGG_OPUS,
  webhook: OGG_OPUS,
};

/** The attachment for `audio` on `platform` (none outside the gateway: the same Ogg/Opus file). */
export function voiceNoteAttachment(audio: Buffer, platform: string | undefined): Attachment {
  const format = (platform !== undefined && Object.hasOwn(FORMATS, platform) ? FORMATS[platform] : undefined) ?? OGG_OPUS;
  return { filename: format.filename, contentType: format.contentType, dataBase64: audio.toString('base64') };
}
