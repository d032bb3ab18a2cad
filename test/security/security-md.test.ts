import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** SECURITY.md stays in step with the code: every secret it handles is named, and so is every safeguard's setting. */
const path = new URL('../../SECURITY.md', import.meta.url);

describe('SECURITY.md', () => {
  it('exists and says how to report a problem privately, with no invented address', () => {
    expect(existsSync(path)).toBe(true);
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/private security\s+advisory/);
    expect(text).not.toMatch(/[\w.+-]+@[\w-]+\.[\w.]+/);
  });

  it.each([
    // The secrets it handles.
    'THREADLINE_TELEGRAM_BOT_TOKEN',
    'THREADLINE_TELEGRAM_WEBHOOK_SECRET',
    'THREADLINE_SLACK_BOT_TOKEN',
    'THREADLINE_SLACK_SIGNING_SECRET',
    'THREADLINE_MATRIX_ACCESS_TOKEN',
    'THREADLINE_DISCORD_BOT_TOKEN',
    'THREADLINE_DISCORD_PUBLIC_KEY',
    'THREADLINE_WEBHOOK_TOKEN',
    'THREADLINE_ADMIN_TOKEN',
    'THREADLINE_SPAN_HMAC_KEY',
    'THREADLINE_WEBHOOK_DELIVERY_URL',
    // What it trusts, refuses and bounds.
    'THREADLINE_INBOUND_BAGGAGE',
    'THREADLINE_ADMINS',
    'THREADLINE_ALLOW_UNAUTHENTICATED',
    'THREADLINE_STRICT_ROUTING',
    'traceparent',
  ])('names %s', (name) => {
    // In code spans: `NAME` or `NAME=value`.
    expect(existsSync(path) ? readFileSync(path, 'utf8') : '').toMatch(new RegExp(`\`${name}[\`=]`));
  });
});
