import { ROOT_CONTEXT, type Attributes } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { formatDestination } from '../../src/session/delivery.js';
import { deliveryAttributes } from '../../src/deliveries/outbox.js';
import { destinationOf, routingMismatch } from '../../src/session/routing-mismatch.js';
import { contextWithSession, createSession, withSessionId, type Session } from '../../src/session/index.js';
import { RedactSpanProcessor, SessionSpanProcessor, pseudonymize, type SessionAttributeOptions } from '../../src/telemetry/index.js';
import { createTestTracing, type TestTracing } from '../helpers/tracing.js';

/**
 * The ids the delivery code sets by hand (routing.destination.*, delivery.destination, the
 * routing.mismatch event) follow THREADLINE_SPAN_PRIVACY like the stamped chat.id and user.id
 * do. The spans are built with the delivery code's own attribute functions, as gateway.deliver is.
 */
const KEY = 'span-id-privacy-key-0123456789';
const HMAC = { privacy: 'hmac', hmacKey: KEY } as const;
const OFF = { privacy: 'off' } as const;
const p = (id: string) => pseudonymize(id, KEY);

/** Ids with ':', '%' and a space, so that delivery.destination percent-encodes them. */
const USER = 'user:ada 7';
const origin = session({ platform: 'webhook', chatType: 'group', chatId: 'team:ops 42%', threadId: 'topic:7', userId: USER }, 's-origin');
const other = session({ platform: 'webhook', chatType: 'dm', chatId: 'other:chat 9' }, 's-other');
/** Every id above, as it would read in clear (raw and percent-encoded). */
const PLAIN_IDS = ['team:ops 42%', 'topic:7', 'other:chat 9', USER].flatMap((id) => [id, encodeURIComponent(id)]);

function session(input: Parameters<typeof createSession>[0], sessionId: string): Session {
  return withSessionId(createSession(input), sessionId);
}

const tracings: TestTracing[] = [];
afterAll(() => Promise.all(tracings.map((tracing) => tracing.provider.shutdown())));

/** Stamping and redaction as start-telemetry wires them, under one privacy setting. */
function tracingFor(options?: SessionAttributeOptions): TestTracing {
  const tracing = createTestTracing(
    options === undefined ? [new SessionSpanProcessor(), new RedactSpanProcessor()] : [new SessionSpanProcessor(options), new RedactSpanProcessor(options)],
  );
  tracings.push(tracing);
  return tracing;
}

/** A gateway.deliver span of `work` delivering to `to`: flagged with routing.mismatch when they differ, as the router does. */
function deliver(tracing: TestTracing, work: Session, to: Session): ReadableSpan {
  tracing.exporter.reset();
  const destination = destinationOf(to);
  const span = tracing.tracer.startSpan('gateway.deliver', {}, contextWithSession(ROOT_CONTEXT, to));
  span.setAttributes(deliveryAttributes({ id: 'd-1', kind: 'reply', destination, origin: { v: 1, session: work } }, 1));
  const mismatch = routingMismatch(work, destination);
  if (mismatch !== undefined) span.addEvent('routing.mismatch', mismatch);
  span.end();
  return tracing.span('gateway.deliver');
}

function mismatchEvent(span: ReadableSpan): Attributes {
  const event = span.events.find((e) => e.name === 'routing.mismatch');
  expect(event).toBeDefined();
  return event!.attributes!;
}

/** Every attribute value of the span and its events, as one text to search. */
function written(span: ReadableSpan): string {
  return JSON.stringify([span.attributes, span.events.map((event) => event.attributes)]);
}

describe('hmac privacy: ids set by the delivery code carry the pseudonyms chat.id carries', () => {
  const tracing = tracingFor(HMAC);

  it('gateway.deliver: routing.destination.chat.id and .thread.id equal chat.id and chat.thread.id; delivery.destination is platform:pseudonym:pseudonym', () => {
    const span = deliver(tracing, origin, origin);
    expect(span.attributes['chat.id']).toBe(p(origin.chatId));
    // user.id is the user's pseudonym under the same key: one search finds a user's spans.
    expect(span.attributes['user.id']).toBe(p(USER));
    expect(span.attributes).toMatchObject({
      'routing.destination.platform': 'webhook',
      'routing.destination.chat.id': span.attributes['chat.id'],
      'routing.destination.chat.thread.id': span.attributes['chat.thread.id'],
      'delivery.destination': `webhook:${p('team:ops 42%')}:${p('topic:7')}`,
      'delivery.id': 'd-1',
      // The origin routing every delivery carries, under the same pseudonyms.
      'routing.origin.chat.id': span.attributes['chat.id'],
      'routing.origin.chat.thread.id': span.attributes['chat.thread.id'],
    });
    for (const id of PLAIN_IDS) expect(written(span)).not.toContain(id);
    // plain privacy (the default) keeps them as the delivery code set them.
    const plain = deliver(tracingFor(), origin, origin);
    expect(plain.attributes).toMatchObject({
      'user.id': USER,
      'routing.destination.chat.id': origin.chatId,
      'delivery.destination': formatDestination(destinationOf(origin)),
    });
  });

  it('a destination without a thread keeps the short form', () => {
    const span = deliver(tracing, other, other);
    expect(span.attributes['delivery.destination']).toBe(`webhook:${p('other:chat 9')}`);
    expect(span.attributes['routing.destination.chat.thread.id']).toBeUndefined();
  });

  it('the routing.mismatch event: origin and destination ids become pseudonyms, an absent thread stays empty', () => {
    const span = deliver(tracing, origin, other);
    expect(mismatchEvent(span)).toEqual({
      'routing.origin.platform': 'webhook',
      'routing.origin.chat.id': p('team:ops 42%'),
      'routing.origin.chat.thread.id': p('topic:7'),
      'routing.destination.platform': 'webhook',
      'routing.destination.chat.id': p('other:chat 9'),
      'routing.destination.chat.thread.id': '',
    });
    // The event's destination is the span's, so one Jaeger search finds both.
    expect(mismatchEvent(span)['routing.destination.chat.id']).toBe(span.attributes['chat.id']);
    for (const id of PLAIN_IDS) expect(written(span)).not.toContain(id);
  });
});

describe('off privacy: no ids at all', () => {
  const tracing = tracingFor(OFF);

  it('gateway.deliver keeps platforms only: no chat or user id, no routing.*.chat ids, delivery.destination is the platform', () => {
    const span = deliver(tracing, origin, origin);
    expect(span.attributes).toMatchObject({
      'chat.platform': 'webhook',
      'chat.type': 'group',
      'delivery.id': 'd-1',
      'delivery.destination': 'webhook',
      'routing.destination.platform': 'webhook',
    });
    // delivery.id is threadline's own; every other *.id would name a chat, thread, user or session.
    expect(Object.keys(span.attributes).filter((key) => key.endsWith('.id') && key !== 'delivery.id')).toEqual([]);
    for (const id of PLAIN_IDS) expect(written(span)).not.toContain(id);
  });

  it('the routing.mismatch event keeps its platforms and loses its ids', () => {
    const span = deliver(tracing, origin, other);
    expect(mismatchEvent(span)).toEqual({ 'routing.origin.platform': 'webhook', 'routing.destination.platform': 'webhook' });
    for (const id of PLAIN_IDS) expect(written(span)).not.toContain(id);
  });
});

describe('exception events', () => {
  it('are redacted like the status message: a recorded error carries no URL credential, token or query', () => {
    const tracing = tracingFor();
    const token = '5550001234:AAHtelegramTokenSecretForThreadline01';
    const span = tracing.tracer.startSpan('gateway.deliver');
    span.recordException(new Error(`request to https://u:pa55@api.telegram.org/bot${token}/sendMessage?key=q1 failed`));
    span.end();
    const event = tracing.span('gateway.deliver').events.find((e) => e.name === 'exception')!;
    expect(event.attributes!['exception.message']).toBe('request to https://api.telegram.org/bot<redacted>/sendMessage failed');
    for (const secret of ['pa55', token.split(':')[1]!, 'key=q1']) expect(JSON.stringify(event.attributes)).not.toContain(secret);
  });
});

describe('ids in URL paths (Discord names channels in its REST paths)', () => {
  const CHANNEL = '1234567890123456789';
  const url = `https://discord.com/api/v10/channels/${CHANNEL}/messages/${CHANNEL}9`;

  function client(options?: SessionAttributeOptions): Attributes {
    const tracing = tracingFor(options);
    tracing.exporter.reset();
    tracing.tracer.startSpan('POST', { attributes: { 'url.full': url, 'url.path': new URL(url).pathname } }).end();
    return tracing.span('POST').attributes;
  }

  it('shows them as pseudonyms in hmac, the ones chat.id gets', () => {
    expect(client(HMAC)).toMatchObject({
      'url.full': `https://discord.com/api/v10/channels/${p(CHANNEL)}/messages/${p(`${CHANNEL}9`)}`,
      'url.path': `/api/v10/channels/${p(CHANNEL)}/messages/${p(`${CHANNEL}9`)}`,
    });
  });

  it('leaves no id in off, and leaves them as they are in plain', () => {
    expect(client(OFF)).toMatchObject({ 'url.full': 'https://discord.com/api/v10/channels/:id/messages/:id', 'url.path': '/api/v10/channels/:id/messages/:id' });
    expect(client()['url.full']).toBe(url);
  });
});
