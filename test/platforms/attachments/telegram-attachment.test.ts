import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../../src/errors.js';
import { TelegramPlatform } from '../../../src/platforms/telegram/telegram-platform.js';
import { FakeTelegram } from '../../../src/testing/fake-telegram.js';
import { attachmentOf, binaryFile, neverAborted, outbound, silentLogger } from './fixtures.js';

let fake: FakeTelegram | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function telegram(): Promise<{ platform: TelegramPlatform; fake: FakeTelegram }> {
  fake = await FakeTelegram.start();
  return { platform: new TelegramPlatform({ token: '1:test', mode: 'polling', apiRoot: fake.apiRoot, logger: silentLogger }), fake };
}

describe('telegram attachments', () => {
  it('send Ogg/Opus as a voice note in the chat and topic, quoting the message, with the text as caption', async () => {
    const { platform, fake } = await telegram();
    const bytes = binaryFile();
    await platform.send(outbound('telegram', '-100123', '17', { inReplyTo: '55', attachment: attachmentOf(bytes) }), neverAborted);
    expect(fake.sent).toEqual([]);
    expect(fake.files).toHaveLength(1);
    const [voice] = fake.files;
    expect(voice).toMatchObject({ method: 'sendVoice', chatId: '-100123', threadId: '17', replyTo: '55', caption: 'Voice note (1.2 s)', filename: 'voice.ogg' });
    expect(voice!.bytes.equals(bytes)).toBe(true);
  });

  it('send any other file as a document, outside a topic when there is none', async () => {
    const { platform, fake } = await telegram();
    const bytes = binaryFile(5_000);
    await platform.send(outbound('telegram', '42', undefined, { kind: 'notification', attachment: attachmentOf(bytes, 'text/csv', 'report.csv') }), neverAborted);
    const [document] = fake.files;
    expect(document).toMatchObject({ method: 'sendDocument', chatId: '42', threadId: undefined, replyTo: undefined, filename: 'report.csv' });
    expect(document!.bytes.equals(bytes)).toBe(true);
  });

  it('send a text too long for a caption as a message of its own, then the file', async () => {
    const { platform, fake } = await telegram();
    const text = 'word '.repeat(300);
    await platform.send(outbound('telegram', '42', '9', { text, attachment: attachmentOf(binaryFile(100)) }), neverAborted);
    expect(fake.sent).toMatchObject([{ chatId: '42', threadId: '9', text }]);
    expect(fake.files).toMatchObject([{ method: 'sendVoice', chatId: '42', threadId: '9', caption: undefined }]);
  });

  it('keep the retry classification: 429 with its wait and 5xx retryable, other 4xx final', async () => {
    const { platform, fake } = await telegram();
    const message = outbound('telegram', '42', undefined, { attachment: attachmentOf(binaryFile(100)) });
    fake.failNext(1, 429, 3);
    const limited = (await platform.send(message, neverAborted).catch((e: unknown) => e)) as DeliveryError;
    expect(limited).toBeInstanceOf(DeliveryError);
    expect(limited).toMatchObject({ retryable: true, retryAfterMs: 3_000 });
    expect(limited.message).toContain('sendVoice');
    fake.failNext(1, 502);
    expect(await platform.send(message, neverAborted).catch((e: unknown) => e)).toMatchObject({ retryable: true });
    fake.failNext(1, 400);
    expect(await platform.send(message, neverAborted).catch((e: unknown) => e)).toMatchObject({ retryable: false });
    expect(fake.files).toEqual([]);
    await platform.send(message, neverAborted);
    expect(fake.files).toHaveLength(1);
  });
});
