import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DISCORD_MAX_SKEW_SECONDS, discordPublicKey, discordSignatureValid } from '../../../src/platforms/discord/discord-signature.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const publicHex = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
const key = discordPublicKey(publicHex);
const now = 1_800_000_000;
const body = '{"type":1}';
const signed = (timestamp: string, raw: string, by = privateKey) => sign(null, Buffer.from(timestamp + raw), by).toString('hex');

describe('discordSignatureValid', () => {
  it('takes a signature over timestamp and body made with the application key', () => {
    expect(discordSignatureValid(key, String(now), signed(String(now), body), body, now)).toBe(true);
  });

  it('refuses another key, another body, another timestamp, a malformed or missing header', () => {
    const other = generateKeyPairSync('ed25519').privateKey;
    expect(discordSignatureValid(key, String(now), signed(String(now), body, other), body, now)).toBe(false);
    expect(discordSignatureValid(key, String(now), signed(String(now), body), '{"type":2}', now)).toBe(false);
    expect(discordSignatureValid(key, String(now + 1), signed(String(now), body), body, now)).toBe(false);
    expect(discordSignatureValid(key, String(now), 'zz', body, now)).toBe(false);
    expect(discordSignatureValid(key, undefined, signed(String(now), body), body, now)).toBe(false);
    expect(discordSignatureValid(key, String(now), undefined, body, now)).toBe(false);
  });

  it('refuses a signed request outside the replay window', () => {
    const old = String(now - DISCORD_MAX_SKEW_SECONDS - 1);
    expect(discordSignatureValid(key, old, signed(old, body), body, now)).toBe(false);
  });

  it('takes only a 32-byte hex key', () => {
    expect(() => discordPublicKey('abc')).toThrow(RangeError);
  });
});
