import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack's replay window: requests older or newer than this are refused. */
export const SLACK_MAX_SKEW_SECONDS = 300;

/**
 * Verifies Slack's v0 request signature: HMAC-SHA256 of `v0:<timestamp>:<raw body>` with the
 * signing secret, compared in constant time, within the 5-minute replay window.
 * https://api.slack.com/authentication/verifying-requests-from-slack
 */
export function slackSignatureValid(
  signingSecret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  rawBody: string,
  nowSeconds = Date.now() / 1000,
): boolean {
  if (timestamp === undefined || signature === undefined || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > SLACK_MAX_SKEW_SECONDS) return false;
  const expected = Buffer.from(slackSignature(signingSecret, timestamp, rawBody));
  const presented = Buffer.from(signature);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

export function slackSignature(signingSecret: string, timestamp: string, rawBody: string): string {
  return 'v0=' + createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex');
}
