import { describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../../src/testing/index.js';
import { useTestGateways } from '../../helpers/gateway.js';

const start = useTestGateways();

describe('a delivery URL with user:password@', () => {
  it('sends the pair as HTTP Basic auth, which a receiver that asks for it accepts', async () => {
    // A password with characters a URL must escape: sent decoded, as the user wrote it.
    const protectedReceiver = await DeliveryReceiver.start({ auth: { username: 'relay', password: 'p@ss:w/rd' } });
    try {
      expect(protectedReceiver.url).toMatch(/^http:\/\/relay:p%40ss%3Aw%2Frd@127\.0\.0\.1:\d+\/deliveries$/);
      const g = await start({ env: { THREADLINE_WEBHOOK_DELIVERY_URL: protectedReceiver.url } });
      expect((await g.send({ chat_id: 'ops', text: 'hello' })).status).toBe(202);
      const [delivery] = await protectedReceiver.waitFor(1);
      expect(delivery!.headers.authorization).toBe(`Basic ${Buffer.from('relay:p@ss:w/rd').toString('base64')}`);
      expect(delivery!.body).toMatchObject({ chat_id: 'ops', kind: 'reply' });
      expect(protectedReceiver.attempts).toBe(1);
    } finally {
      await protectedReceiver.close();
    }
  });

  it('sends no Authorization header to a URL without credentials', async () => {
    const g = await start();
    await g.send({ chat_id: 'ops', text: 'hello' });
    const [delivery] = await g.receiver.waitFor(1);
    expect(delivery!.headers.authorization).toBeUndefined();
  });
});
