import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../../src/errors.js';
import { SlackPlatform } from '../../../src/platforms/slack/slack-platform.js';
import { FakeSlack } from '../../../src/testing/fake-slack.js';
import { attachmentOf, binaryFile, neverAborted, outbound, silentLogger } from './fixtures.js';

let fake: FakeSlack | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function slack(): Promise<{ platform: SlackPlatform; fake: FakeSlack }> {
  fake = await FakeSlack.start();
  return {
    platform: new SlackPlatform({ botToken: 'xoxb-test', signingSecret: 'secret', apiUrl: fake.apiUrl, threadTopLevel: false, logger: silentLogger }),
    fake,
  };
}

const THREAD = '1700000000.000100';

describe('slack attachments', () => {
  it('upload the file (getUploadURLExternal, upload, completeUploadExternal) into the channel and thread, the text as its comment', async () => {
    const { platform, fake } = await slack();
    const bytes = binaryFile();
    await platform.send(outbound('slack', 'C123', THREAD, { attachment: attachmentOf(bytes) }), neverAborted);
    expect(fake.sent).toEqual([]);
    expect(fake.files).toHaveLength(1);
    const [file] = fake.files;
    expect(file).toMatchObject({ channel: 'C123', threadTs: THREAD, initialComment: 'Voice note (1.2 s)', filename: 'voice.ogg' });
    expect(file!.bytes.equals(bytes)).toBe(true);
  });

  it('upload outside a thread when there is none', async () => {
    const { platform, fake } = await slack();
    await platform.send(outbound('slack', 'C9', undefined, { attachment: attachmentOf(binaryFile(500)) }), neverAborted);
    expect(fake.files).toMatchObject([{ channel: 'C9', threadTs: undefined }]);
  });

  it('keep the retry classification: 429 with its wait and 5xx retryable, a refusal final', async () => {
    const { platform, fake } = await slack();
    const message = outbound('slack', 'C1', undefined, { attachment: attachmentOf(binaryFile(100)) });
    fake.failNext(1, 429, 4);
    expect(await platform.send(message, neverAborted).catch((e: unknown) => e)).toMatchObject({ retryable: true, retryAfterMs: 4_000 });
    fake.failNext(1, 503);
    expect(await platform.send(message, neverAborted).catch((e: unknown) => e)).toMatchObject({ retryable: true });
    // The URL is handed out, then the upload itself fails.
    fake.failUploadNext(1, 500);
    expect(await platform.send(message, neverAborted).catch((e: unknown) => e)).toMatchObject({ retryable: true });
    fake.refuseNext('not_in_channel');
    const refused = (await platform.send(message, neverAborted).catch((e: unknown) => e)) as DeliveryError;
    expect(refused).toBeInstanceOf(DeliveryError);
    expect(refused.retryable).toBe(false);
    expect(refused.message).toContain('refused the file upload: not_in_channel');
    expect(fake.files).toEqual([]);
    await platform.send(message, neverAborted);
    expect(fake.files).toHaveLength(1);
  });
});
