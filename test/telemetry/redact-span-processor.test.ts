import { SpanStatusCode } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { RedactSpanProcessor, redactText, safePath, safeUrl } from '../../src/telemetry/index.js';
import { createTestTracing } from '../helpers/tracing.js';

const tracing = createTestTracing([new RedactSpanProcessor()]);
afterAll(() => tracing.provider.shutdown());
const TOKEN = '5550001234:AAHtelegramTokenSecretForThreadline01';

describe('safeUrl, safePath, redactText', () => {
  it.each([
    [`https://api.telegram.org/bot${TOKEN}/sendMessage`, 'https://api.telegram.org/bot<redacted>/sendMessage'],
    [`https://api.telegram.org/file/bot${TOKEN}/photo.jpg`, 'https://api.telegram.org/file/bot<redacted>/photo.jpg'],
    ['https://user:pa55@hooks.example.com:8443/in?token=q#frag', 'https://hooks.example.com:8443/in'],
    ['https://REDACTED:REDACTED@hooks.example.com/in', 'https://hooks.example.com/in'],
    ['http://127.0.0.1:4318/v1/traces', 'http://127.0.0.1:4318/v1/traces'],
    ['https://discord.com/api/v10/interactions/1234/aW50ZXJhY3Rpb24.tok-en/callback', 'https://discord.com/api/v10/interactions/1234/<redacted>/callback'],
    ['https://discord.com/api/v10/webhooks/1234/aW50ZXJhY3Rpb24/messages/@original', 'https://discord.com/api/v10/webhooks/1234/<redacted>/messages/@original'],
  ])('safeUrl(%s) is %s', (url, safe) => {
    expect(safeUrl(url)).toBe(safe);
    expect(safeUrl(new URL(url))).toBe(safe);
  });

  it('keeps only the path of a relative URL', () => {
    expect(safePath(`/bot${TOKEN}/getUpdates?offset=3`)).toBe('/bot<redacted>/getUpdates');
    expect(safePath('/v1/messages?token=abc')).toBe('/v1/messages');
  });

  it('redacts URLs and shaped credentials inside text', () => {
    const text = `request to http://u:p@h/bot${TOKEN}/sendMessage?x=1 failed; Authorization: Bearer abc.def, token xoxb-1-2-abc, bare ${TOKEN}`;
    const safe = redactText(text);
    for (const secret of ['u:p@', TOKEN, TOKEN.split(':')[1]!, 'x=1', 'abc.def', 'xoxb-1-2-abc']) expect(safe).not.toContain(secret);
    expect(safe).toContain('http://h/bot<redacted>/sendMessage failed');
  });
});

describe('RedactSpanProcessor', () => {
  it('takes secrets out of URL attributes set at start (as the http and undici instrumentations do)', () => {
    tracing.exporter.reset();
    tracing.tracer
      .startSpan('POST', {
        attributes: {
          'url.full': `https://REDACTED:REDACTED@api.telegram.org/bot${TOKEN}/sendMessage?a=b`,
          'http.url': `https://api.telegram.org/bot${TOKEN}/sendMessage`,
          'url.path': `/bot${TOKEN}/sendMessage`,
          'url.query': '?token=secret',
          'http.target': '/in?token=secret',
          'server.address': 'api.telegram.org',
          'http.request.header.authorization': ['Bearer secret'],
          'http.request.header.x-api-key': ['secret'],
        },
      })
      .end();
    expect(tracing.span('POST').attributes).toEqual({
      'url.full': 'https://api.telegram.org/bot<redacted>/sendMessage',
      'http.url': 'https://api.telegram.org/bot<redacted>/sendMessage',
      'url.path': '/bot<redacted>/sendMessage',
      'url.query': 'REDACTED',
      'http.target': '/in',
      'server.address': 'api.telegram.org',
      'http.request.header.authorization': ['REDACTED'],
      'http.request.header.x-api-key': ['REDACTED'],
    });
  });

  it('also covers attributes set after the start, and the status message', () => {
    tracing.exporter.reset();
    const span = tracing.tracer.startSpan('gateway.deliver');
    span.setAttribute('url.full', 'https://u:p@hooks.example.com/in?token=secret');
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'request to https://u:p@hooks.example.com/in?token=secret failed' });
    span.end();
    const ended = tracing.span('gateway.deliver');
    expect(ended.attributes['url.full']).toBe('https://hooks.example.com/in');
    expect(ended.status).toEqual({ code: SpanStatusCode.ERROR, message: 'request to https://hooks.example.com/in failed' });
  });

  it('leaves other attributes and an empty query alone', () => {
    tracing.exporter.reset();
    tracing.tracer.startSpan('GET', { attributes: { 'url.query': '', 'chat.id': 'a?b@c', 'url.full': 'http://h/p' } }).end();
    expect(tracing.span('GET').attributes).toEqual({ 'url.query': '', 'chat.id': 'a?b@c', 'url.full': 'http://h/p' });
  });
});
