import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** Interactions older or newer than this are refused, so a captured request cannot be replayed later. */
export const DISCORD_MAX_SKEW_SECONDS = 300;
const HEX_KEY = /^[0-9a-f]{64}$/i;
const HEX_SIGNATURE = /^[0-9a-f]{128}$/i;

/** Whether `hex` is an Ed25519 public key as the Developer Portal shows it: 32 bytes, hex. */
export function isDiscordPublicKey(hex: string): boolean {
  return HEX_KEY.test(hex);
}

/** The application's public key (hex, from the Developer Portal) as a key node:crypto verifies with. */
export function discordPublicKey(hex: string): KeyObject {
  if (!isDiscordPublicKey(hex)) throw new RangeError('A Discord public key is 64 hex digits');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hex, 'hex').toString('base64url') }, format: 'jwk' });
}

/**
 * Verifies an interaction's Ed25519 signature (X-Signature-Ed25519) over its timestamp
 * (X-Signature-Timestamp) and raw body, within the replay window.
 * https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers
 */
export function discordSignatureValid(
  publicKey: KeyObject,
  timestamp: string | undefined,
  signature: string | undefined,
  rawBody: string,
  nowSeconds = Date.now() / 1000,
): boolean {
  if (timestamp === undefined || signature === undefined || !/^\d{1,12}$/.test(timestamp) || !HEX_SIGNATURE.test(signature)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > DISCORD_MAX_SKEW_SECONDS) return false;
  return verify(null, Buffer.from(timestamp + rawBody), publicKey, Buffer.from(signature, 'hex'));
}
