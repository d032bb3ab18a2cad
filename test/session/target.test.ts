import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../src/errors.js';
import { formatDestination } from '../../src/session/delivery.js';
import { parseTarget } from '../../src/session/target.js';
import { until, useGatewayWith, webhookOrigin } from '../helpers/gateway.js';

describe('delivery targets', () => {
  it.each([
    ['origin', { to: 'origin' }],
    ['home', { to: 'home' }],
    ['home:slack', { to: 'home', platform: 'slack' }],
    ['telegram:-100123', { to: 'explicit', destination: { platform: 'telegram', chatId: '-100123' } }],
    ['telegram:-100123:42', { to: 'explicit', destination: { platform: 'telegram', chatId: '-100123', threadId: '42' } }],
    ['webhook:a%3Ab:t%2F1', { to: 'explicit', destination: { platform: 'webhook', chatId: 'a:b', threadId: 't/1' } }],
  ])('parses %s', (text, target) => {
    expect(parseTarget(text)).toEqual(target);
  });

  it.each(['', 'telegram', 'telegram:', 'a:b:c:d', 'telegram::1', 'home:', 'webhook:%E0%A4%A'])('refuses %j with TL_TARGET_INVALID', (text) => {
    expect(() => parseTarget(text)).toThrow(expect.objectContaining({ code: 'TL_TARGET_INVALID' }));
  });

  it('round-trips any ids, ":" included, and never throws anything but a ThreadlineError', () => {
    const id = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(fc.constantFrom('webhook', 'telegram', 'slack'), id, fc.option(id, { nil: undefined }), (platform, chatId, threadId) => {
        const destination = { platform, chatId, ...(threadId === undefined ? {} : { threadId }) };
        expect(parseTarget(formatDestination(destination))).toEqual({ to: 'explicit', destination });
      }),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          parseTarget(text);
        } catch (error) {
          expect(error).toBeInstanceOf(ThreadlineError);
        }
      }),
    );
  });
});

describe('an explicit delivery', () => {
  const start = useGatewayWith();

  it('goes to the named chat and thread, and is not flagged as a misroute', async () => {
    const gateway = await start();
    const answer = await gateway.send({ chat_id: 'origin', text: 'hi' });
    await gateway.receiver.waitFor(1);
    await gateway.running.gateway.router.deliver({
      id: 'send-1',
      kind: 'send',
      text: 'elsewhere',
      target: parseTarget('webhook:ops%3Aalerts:7'),
      origin: webhookOrigin('origin', answer.body['session_id']),
    });
    const sent = (await gateway.receiver.waitFor(2)).find((delivery) => delivery.body.kind === 'send')!;
    expect(sent.body).toMatchObject({ chat_id: 'ops:alerts', thread_id: '7', text: 'elsewhere' });
    await until(() => gateway.running.gateway.outbox.stats().delivered === 2);
    expect(gateway.running.gateway.router.mismatches()).toBe(0);
  });

  it('to a platform that is not enabled is refused before anything is recorded', async () => {
    const gateway = await start();
    await expect(
      gateway.running.gateway.router.deliver({
        id: 'send-2',
        kind: 'send',
        text: 'x',
        target: parseTarget('telegram:1'),
        origin: webhookOrigin('o', 'tl_x'),
      }),
    ).rejects.toMatchObject({ code: 'TL_TARGET_INVALID' });
    expect((await gateway.running.gateway.health()).outbox.open).toBe(0);
  });
});

describe('backoff', () => {
  it('honours Retry-After but never longer than its cap, and jitters under the ceiling', async () => {
    const { backoffMs } = await import('../../src/deliveries/backoff.js');
    const options = { baseMs: 100, maxMs: 1000, maxRetryAfterMs: 3_600_000 };
    expect(backoffMs(3, options, 24 * 3600_000)).toBe(3_600_000);
    expect(backoffMs(1, options, 5000)).toBe(5000);
    for (let attempt = 0; attempt < 40; attempt++) expect(backoffMs(attempt, options)).toBeLessThanOrEqual(1000);
  });
});
