import { describe, expect, it } from 'vitest';
import type { Agent, Turn } from '../../src/agent/agent.js';
import { DEFAULT_OUTBOUND_POLICY } from '../../src/session/index.js';
import { createPropagator } from '../../src/telemetry/index.js';
import { useGatewayWith } from '../helpers/gateway.js';
import { useGlobalPropagator } from '../helpers/propagation.js';

const start = useGatewayWith();

/** An agent whose turns wait until released, to hold the queue full. */
function heldAgent(): Agent & { release(): void; started: Turn[] } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const started: Turn[] = [];
  return {
    started,
    release: () => release(),
    handle: async (turn) => {
      started.push(turn);
      await gate;
      await turn.reply(turn.text);
    },
  };
}

describe('POST /v1/messages', () => {
  it('answers 202 with message, session and trace ids, and replies to the same chat and thread', async () => {
    const g = await start();
    const answer = await g.send({ chat_id: 'c:1', thread_id: 't/1', text: 'hi', message_id: 'm-9' });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      message_id: expect.any(String),
      session_id: expect.stringMatching(/^tl_/),
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    const [delivery] = await g.receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ chat_id: 'c:1', thread_id: 't/1', text: 'hi', kind: 'reply', in_reply_to: 'm-9' });
    expect(delivery!.headers['traceparent']).toContain(answer.body['trace_id']);
    expect(delivery!.headers['idempotency-key']).toBe(delivery!.body.idempotency_key);
  });

  it('gives time-ordered message ids (UUIDv7), so the store appends instead of scattering', async () => {
    const g = await start();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(String((await g.send({ chat_id: 'c:order', text: `m${i}` })).body['message_id']));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
  });

  it('requires the bearer token when one is configured, compared exactly', async () => {
    const g = await start({ THREADLINE_WEBHOOK_TOKEN: 's3cret' });
    expect((await g.send({ chat_id: 'c', text: 'x' })).status).toBe(401);
    expect((await g.send({ chat_id: 'c', text: 'x' }, { authorization: 'Bearer s3cre' })).status).toBe(401);
    expect((await g.send({ chat_id: 'c', text: 'x' }, { authorization: 'Bearer s3cret!' })).body['code']).toBe('TL_UNAUTHORIZED');
    expect((await g.send({ chat_id: 'c', text: 'x' }, { authorization: 'Bearer s3cret' })).status).toBe(202);
    const rejected = g.telemetry.spans().filter((span) => span.name === 'gateway.reject' && span.attributes['error.type'] === 'TL_UNAUTHORIZED');
    expect(rejected.length).toBeGreaterThanOrEqual(3);
    expect(rejected[0]!.attributes).toMatchObject({ 'http.response.status_code': 401, 'url.path': '/v1/messages' });
  });

  it.each([
    [{ text: 'x' }, 'chat_id'],
    [{ chat_id: 'c' }, 'text'],
    [{ chat_id: 7, text: 'x' }, 'chat_id'],
    [{ chat_id: 'c', text: 'x', chat_type: 'room' }, 'chat_type'],
    [{ chat_id: 'c', text: 'x', threadId: '1' }, 'threadId'],
    [{ chat_id: 'x'.repeat(257), text: 'x' }, 'chat_id'],
    [{ chat_id: 'a\u0000b', text: 'x' }, 'chat_id'],
    [{ chat_id: 'c', text: '' }, 'text'],
  ])('answers 400 naming the field for %j', async (body, field) => {
    const g = await start();
    const answer = await g.send(body as never);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: expect.stringMatching(/^TL_(BAD_REQUEST|SESSION_INVALID)$/), field });
    expect(answer.body['error']).toContain(field);
  });

  it('answers 400 for a body that is not JSON and 413 over 64 KiB', async () => {
    const g = await start();
    const url = `${g.url}/v1/messages`;
    const bad = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"chat_id":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'TL_BAD_REQUEST' });
    const huge = await g.send({ chat_id: 'c', text: 'x'.repeat(65 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body['code']).toBe('TL_PAYLOAD_TOO_LARGE');
    expect(g.receiver.received).toEqual([]);
  });

  it('answers 429 with Retry-After when the intake queue is full, and loses nothing it accepted', async () => {
    const agent = heldAgent();
    const g = await start({ THREADLINE_QUEUE_CAPACITY: '3', THREADLINE_CONCURRENCY: '1' }, agent);
    const answers = await Promise.all(['1', '2', '3', '4', '5'].map((text) => g.send({ chat_id: `c${text}`, text })));
    const accepted = answers.filter((answer) => answer.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted).toHaveLength(3);
    expect(refused).toHaveLength(2);
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect(refused[0]!.body['code']).toBe('TL_INTAKE_FULL');
    agent.release();
    expect((await g.receiver.waitFor(3)).map((delivery) => delivery.body.text).sort()).toHaveLength(3);
  });

  it('lets /stop in when the queue is full and stops the running turn', async () => {
    const agent = heldAgent();
    const g = await start({ THREADLINE_QUEUE_CAPACITY: '1', THREADLINE_CONCURRENCY: '1' }, agent);
    expect((await g.send({ chat_id: 'c', text: 'long' })).status).toBe(202);
    expect((await g.send({ chat_id: 'c', text: 'more' })).status).toBe(429);
    expect((await g.send({ chat_id: 'c', text: '/stop' })).status).toBe(202);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(agent.started[0]!.signal.aborted).toBe(true);
    agent.release();
  });

  it('lets /stop past a full queue only into a reserve as large as the concurrency', async () => {
    const agent = heldAgent();
    const g = await start({ THREADLINE_QUEUE_CAPACITY: '1', THREADLINE_CONCURRENCY: '1' }, agent);
    expect((await g.send({ chat_id: 'c', text: 'long' })).status).toBe(202);
    // Other chats: their /stop aborts nothing and waits behind the held turn.
    expect((await g.send({ chat_id: 'd', text: '/stop' })).status).toBe(202);
    const refused = await g.send({ chat_id: 'e', text: '/stop' });
    expect(refused.status).toBe(429);
    expect(refused.body['code']).toBe('TL_INTAKE_FULL');
    agent.release();
  });

  it('runs the messages of one session in order and sessions concurrently', async () => {
    const g = await start({ THREADLINE_CONCURRENCY: '8' });
    await Promise.all(
      ['a', 'b'].map(async (chat) => {
        for (let i = 0; i < 20; i++) expect((await g.send({ chat_id: chat, text: `${chat}${i}` })).status).toBe(202);
      }),
    );
    const deliveries = await g.receiver.waitFor(40);
    for (const chat of ['a', 'b']) {
      const texts = deliveries.filter((d) => d.body.chat_id === chat).map((d) => d.body.text);
      expect(texts).toEqual(Array.from({ length: 20 }, (_, i) => `${chat}${i}`));
    }
  });
});

describe('inbound trace context', () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it('links to an unauthenticated traceparent instead of joining its trace', async () => {
    const g = await start();
    const answer = await g.send({ chat_id: 'c', text: 'x' }, { traceparent });
    const traceId = answer.body['trace_id'] as string;
    expect(traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    const spans = await g.waitForSpans(traceId, ['gateway.message']);
    const root = spans.find((span) => span.name === 'gateway.message')!;
    expect(root.links.map((link) => link.context.spanId)).toEqual(['b7ad6b7169203331']);
  });

  it('joins the trace of an authenticated caller', async () => {
    const g = await start({ THREADLINE_WEBHOOK_TOKEN: 'tok' });
    const answer = await g.send({ chat_id: 'c', text: 'x' }, { traceparent, authorization: 'Bearer tok' });
    expect(answer.body['trace_id']).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('never routes on inbound baggage', async () => {
    const g = await start();
    const answer = await g.send(
      { chat_id: 'real', text: 'x' },
      { baggage: 'chat.id=victim,chat.thread.id=9,session.id=stolen,chat.platform=telegram' },
    );
    const [delivery] = await g.receiver.waitFor(1);
    expect(delivery!.body.chat_id).toBe('real');
    expect(delivery!.body.thread_id).toBeNull();
    expect(delivery!.baggage).toMatchObject({ 'chat.id': 'real', 'chat.platform': 'webhook' });
    expect(delivery!.baggage['chat.thread.id']).toBeUndefined();
    expect(delivery!.baggage['session.id']).toBe(answer.body['session_id']);
    expect(await g.routingProblems(answer.body['trace_id'] as string, { chatId: 'real' })).toEqual([]);
  });
});

describe('inbound trace context in the formats OTEL_PROPAGATORS names (b3)', () => {
  useGlobalPropagator(createPropagator({ outboundBaggage: DEFAULT_OUTBOUND_POLICY, inboundBaggage: false, propagators: ['b3'] }));
  const b3 = '0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1';

  it('joins the b3 trace of an authenticated caller', async () => {
    const g = await start({ THREADLINE_WEBHOOK_TOKEN: 'tok' });
    const answer = await g.send({ chat_id: 'c', text: 'x' }, { b3, authorization: 'Bearer tok' });
    expect(answer.status).toBe(202);
    expect(answer.body['trace_id']).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('links to the b3 trace of an unauthenticated caller instead of joining it', async () => {
    const g = await start();
    const answer = await g.send({ chat_id: 'c', text: 'x' }, { b3 });
    const traceId = answer.body['trace_id'] as string;
    expect(traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    const spans = await g.waitForSpans(traceId, ['gateway.message']);
    const root = spans.find((span) => span.name === 'gateway.message')!;
    expect(root.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331']]);
  });
});
