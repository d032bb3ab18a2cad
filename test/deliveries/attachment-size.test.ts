import { describe, expect, it } from 'vitest';
import { MAX_ATTACHMENT_BYTES } from '../../src/session/delivery.js';
import { useTestGateways, webhookOrigin } from '../helpers/gateway.js';

const start = useTestGateways();

describe('a delivery attachment', () => {
  it('of 1 MiB goes; one byte more is refused with TL_TOOL_INPUT and nothing is recorded', async () => {
    const g = await start();
    const deliver = (id: string, bytes: number) =>
      g.running.gateway.router.deliver({
        id,
        kind: 'notification',
        text: 'file',
        attachment: { filename: 'f.bin', contentType: 'application/octet-stream', dataBase64: Buffer.alloc(bytes).toString('base64') },
        target: { to: 'explicit', destination: { platform: 'webhook', chatId: 'c' } },
        origin: webhookOrigin('c', 'tl_x'),
      });
    await expect(deliver('too-big', MAX_ATTACHMENT_BYTES + 1)).rejects.toMatchObject({ code: 'TL_TOOL_INPUT' });
    await deliver('fits', MAX_ATTACHMENT_BYTES);
    const [received] = await g.receiver.waitFor(1);
    expect(received!.body.idempotency_key).toBe('fits');
    expect((await g.deliveries()).map((delivery) => delivery.id)).toEqual(['fits']);
  });
});
