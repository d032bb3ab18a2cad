import Value from 'typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookPlatform } from '../../../src/platforms/webhook/webhook-platform.js';
import { webhookDeliverySchema } from '../../../src/platforms/webhook/webhook-schema.js';
import { DeliveryReceiver } from '../../../src/testing/delivery-receiver.js';
import { attachmentOf, binaryFile, neverAborted, outbound, recordingLogger, silentLogger } from './fixtures.js';

let receiver: DeliveryReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function webhookTo(): Promise<{ platform: WebhookPlatform; receiver: DeliveryReceiver }> {
  receiver = await DeliveryReceiver.start();
  return { platform: new WebhookPlatform({ deliveryUrl: receiver.url, idempotencyTtlMs: 60_000, logger: silentLogger }), receiver };
}

describe('webhook attachments', () => {
  it('carry the file inline, bytes intact, in a body that validates against the delivery schema', async () => {
    const { platform, receiver } = await webhookTo();
    const bytes = binaryFile();
    await platform.send(outbound('webhook', 'c-1', 't-1', { attachment: attachmentOf(bytes) }), neverAborted);
    const [delivery] = await receiver.waitFor(1);
    const body = delivery!.body;
    expect(body).toMatchObject({ chat_id: 'c-1', thread_id: 't-1', text: 'Voice note (1.2 s)', kind: 'reply' });
    expect(body.attachment).toMatchObject({ filename: 'voice.ogg', content_type: 'audio/ogg' });
    expect(Buffer.from(body.attachment!.data_base64, 'base64').equals(bytes)).toBe(true);
    expect(Value.Check(webhookDeliverySchema, body)).toBe(true);
  });

  it('leave the body as it was when there is no file', async () => {
    const { platform, receiver } = await webhookTo();
    await platform.send(outbound('webhook', 'c-2', undefined, {}), neverAborted);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).not.toHaveProperty('attachment');
    expect(Value.Check(webhookDeliverySchema, delivery!.body)).toBe(true);
  });

  it('fit the schema up to 1 MiB, and not beyond, nor with a body that is not base64', () => {
    const valid = (data_base64: string) =>
      Value.Check(webhookDeliverySchema, {
        chat_id: 'c',
        thread_id: null,
        text: '',
        kind: 'reply',
        trace_id: 'a'.repeat(32),
        idempotency_key: 'k',
        attachment: { filename: 'voice.ogg', content_type: 'audio/ogg', data_base64 },
      });
    expect(valid(Buffer.alloc(1024 * 1024).toString('base64'))).toBe(true);
    expect(valid(Buffer.alloc(1024 * 1024 + 3).toString('base64'))).toBe(false);
    expect(valid('not base64!')).toBe(false);
  });

  it('are logged by name, type and size, never their bytes, when no delivery URL is set', async () => {
    const { logger, lines } = recordingLogger();
    const platform = new WebhookPlatform({ idempotencyTtlMs: 60_000, logger });
    const bytes = binaryFile(3_000);
    await platform.send(outbound('webhook', 'c-3', undefined, { attachment: attachmentOf(bytes) }), neverAborted);
    expect(lines).toHaveLength(1);
    const logged = JSON.parse(lines[0]!) as { delivery: { attachment: unknown } };
    expect(logged.delivery.attachment).toEqual({ filename: 'voice.ogg', content_type: 'audio/ogg', bytes: 3_000 });
    expect(lines[0]).not.toContain(bytes.toString('base64').slice(0, 40));
  });
});
