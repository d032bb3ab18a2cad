import { describe, expect, it } from 'vitest';
import { DeliveryMinutes } from '../../src/deliveries/delivery-minutes.js';
import type { GatewayHealth } from '../../src/gateway/gateway.js';
import { escapeHtml, html } from '../../src/operator/html.js';
import type { OperatorView } from '../../src/operator/operator-view.js';
import { renderOperatorPage } from '../../src/operator/render-operator-page.js';
import { traceLink } from '../../src/operator/trace-link.js';

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>' " \` & \u202e`;
const TRACE = '0af7651916cd43dd8448eb211c80319c';

const health: GatewayHealth = {
  status: 'ok',
  reasons: [],
  queued: 0,
  outbox: { open: 0, fullChats: 0 },
  deliveries: { delivered: 0, retried: 0, failed: 0, mismatches: 0 },
  refusal: undefined,
};

function viewWith(text: string): OperatorView {
  const now = Date.now();
  const origin = { v: 1 as const, session: { platform: 'webhook', chatType: 'dm' as const, chatId: text, sessionId: 's' }, origin: { traceId: TRACE, spanId: '00f067aa0ba902b7', traceFlags: 1 } };
  return {
    now,
    health: { ...health, reasons: [text] },
    liveTurns: [{ messageId: text, platform: 'webhook', chatId: text, chatName: text, threadId: text, startedAt: now, traceId: TRACE }],
    deadLetters: [
      { id: text, kind: 'reply', destination: { platform: 'webhook', chatId: text }, text, origin, attempts: 1, createdAt: now, attemptsSince: now, status: 'failed', dueAt: now, lastError: text, finishedAt: now },
    ],
    moreDeadLetters: false,
    misroutes: [],
    lost: [{ type: 'lost', what: 'delivery', id: text, state: 'failed', dueAt: now, destination: { platform: 'webhook', chatId: text }, lastError: text, originTraceId: text, source: 'store' }],
    commands: [{ id: text, origin, destination: { platform: 'webhook', chatId: text }, command: text, pid: 1, startedAt: now, notifyOnComplete: true, progressSent: 0 }],
    commandCount: 1,
    schedules: [{ id: text, origin, destination: { platform: 'webhook', chatId: text }, target: text, text, cron: text, timezone: text, nextAt: now, createdAt: now }],
    scheduleCount: 1,
    minutes: new DeliveryMinutes().last(now),
  };
}

describe('the operator page’s HTML', () => {
  it('escapes every value it is given: hostile chat names, texts and ids stay text', () => {
    const page = renderOperatorPage(viewWith(HOSTILE), { traceUiUrl: 'https://jaeger.example/trace/{traceId}', csrf: 'proof', loggedIn: true });
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<img');
    expect(page).not.toMatch(/onerror=alert\(1\)>/);
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    // A bidi override is shown as an escape, so it cannot reorder what stands beside it.
    expect(page).not.toContain('\u202e');
    expect(page).toContain('\\u202e');
    // In an attribute too: the retry form's hidden id cannot break out of its quotes.
    expect(page).toContain(`name="id" value="&lt;script&gt;alert(&quot;x&quot;)`);
    expect(page.match(/<script/g)).toBeNull();
  });

  it('links each trace into the configured UI, and links nothing without one or for an id that is not a trace id', () => {
    const linked = renderOperatorPage(viewWith('c'), { traceUiUrl: 'https://jaeger.example/trace/{traceId}', csrf: 'proof', loggedIn: false });
    expect(linked).toContain(`href="https://jaeger.example/trace/${TRACE}"`);
    expect(renderOperatorPage(viewWith('c'), { traceUiUrl: undefined, csrf: 'proof', loggedIn: false })).not.toContain('href="https://');
    expect(traceLink('https://t/{traceId}', '"><script>')).toBeUndefined();
    expect(traceLink('https://t/{traceId}', '0'.repeat(32))).toBeUndefined();
  });

  it('escapes in the template, and keeps what the template made', () => {
    expect(escapeHtml(`<a href='x'>&"\``)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;&quot;&#96;');
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${['<', html`<br>`]}${undefined}${false}</p>`.markup).toBe('<p><b>&lt;i&gt;</b>&lt;<br></p>');
  });
});
