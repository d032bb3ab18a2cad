import fc from 'fast-check';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { describe, expect, it } from 'vitest';
import type { TestGateway } from '../../src/testing/index.js';
import { VERSION } from '../../src/version.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();
const TOKEN = 'openapi-test-token';
const auth = { authorization: `Bearer ${TOKEN}` };

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function served(g: TestGateway, headers: Record<string, string> = {}): Promise<{ status: number; document: Json }> {
  const answer = await fetch(`${g.url}/v1/openapi.json`, { headers });
  return { status: answer.status, document: (await answer.json()) as Json };
}

/** A validator for a schema as the document states it: TypeBox's JSON Schema checker, not the server's Ajv. */
function validatorOf(schema: unknown): (value: unknown) => boolean {
  expect(schema, 'schema in the document').toBeTypeOf('object');
  const compiled = Compile(schema as TSchema);
  return (value) => compiled.Check(value);
}

const messages = (document: Json): Json => document['paths']['/v1/messages']['post'];
const responseSchema = (document: Json, status: number) => messages(document)['responses'][String(status)]?.['content']?.['application/json']?.['schema'];

async function outboxPending(g: TestGateway): Promise<number> {
  return ((await (await fetch(`${g.url}/v1/health`)).json()) as Json)['outbox_pending'] as number;
}

describe('GET /v1/openapi.json', () => {
  it('serves an OpenAPI 3.1 document of threadline’s own routes, without the webhook token', async () => {
    const g = await start({ env: { THREADLINE_WEBHOOK_TOKEN: TOKEN }, telegram: true, slack: true });
    const { status, document } = await served(g);
    expect(status).toBe(200);
    expect(document['openapi']).toBe('3.1.0');
    expect(document['info']).toMatchObject({ title: 'threadline', version: VERSION });
    // Telegram's and Slack's routes follow their platforms' contracts: not listed.
    expect(Object.keys(document['paths']).sort()).toEqual(['/v1/health', '/v1/messages', '/v1/ready']);
    expect(document['components']['securitySchemes']['webhookToken']).toMatchObject({ type: 'http', scheme: 'bearer' });

    const post = messages(document);
    expect(post['security']).toContainEqual({ webhookToken: [] });
    expect(post['requestBody']['required']).toBe(true);
    expect(post['requestBody']['content']['application/json']['schema']).toMatchObject({ type: 'object', required: ['chat_id', 'text'], additionalProperties: false });
    expect(post['parameters']).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
    expect(Object.keys(post['responses']).sort()).toEqual(['202', '400', '401', '413', '415', '422', '429', '500', '503']);
    for (const [code, response] of Object.entries<Json>(post['responses'])) {
      expect(response['description'], code).toEqual(expect.any(String));
      if (code === '202') continue;
      expect(response['content']['application/json']['schema'], code).toMatchObject({ type: 'object', required: ['error', 'code'] });
    }
    expect(post['responses']['429']['headers']).toHaveProperty('retry-after');
    expect(document['webhooks']['delivery']['post']['requestBody']['content']['application/json']['schema']).toMatchObject({ type: 'object' });
    // Every operation of a 3.1 document names its responses, each with a description.
    for (const [path, item] of Object.entries<Json>(document['paths'])) {
      expect(path).toMatch(/^\//);
      for (const operation of Object.values<Json>(item)) {
        for (const response of Object.values<Json>(operation['responses'])) expect(response['description']).toEqual(expect.any(String));
      }
    }
  });

  it('is the committed docs/openapi.json (npm run docs:openapi rewrites it)', async () => {
    const g = await start();
    const { document } = await served(g);
    await expect(`${JSON.stringify(document, null, 2)}\n`).toMatchFileSnapshot('../../docs/openapi.json');
  });
});

describe('the documented contract is the enforced one', () => {
  it('refuses with 400 exactly the bodies the document’s schema refuses, and delivers as the document says', async () => {
    const g = await start();
    const { document } = await served(g);
    const documentAccepts = validatorOf(messages(document)['requestBody']['content']['application/json']['schema']);
    const accepted = validatorOf(responseSchema(document, 202));
    const refused = validatorOf(responseSchema(document, 400));
    const delivery = validatorOf(document['webhooks']['delivery']['post']['requestBody']['content']['application/json']['schema']);

    // Characters the session rules take: those rules (control characters) are stated in words, not in the schema.
    const text = fc.string({ unit: fc.constantFrom(...'aZ09 :/-_.чü'), maxLength: 6 });
    const valid = fc.oneof(text.filter((value) => value.length > 0), fc.constant('x'.repeat(256)));
    const invalid = fc.oneof(fc.constant(''), fc.constant('x'.repeat(257)), fc.integer(), fc.boolean(), fc.constant(null), fc.array(text, { maxLength: 1 }), fc.constant({}));
    const field = fc.option(fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: invalid, weight: 1 }), { nil: undefined, freq: 2 });
    const body = fc.record({
      chat_id: fc.option(fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: invalid, weight: 1 }), { nil: undefined, freq: 12 }),
      text: fc.option(fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: invalid, weight: 1 }), { nil: undefined, freq: 12 }),
      thread_id: field,
      chat_type: fc.option(fc.constantFrom('dm', 'group', 'channel', 'thread', 'room', 7), { nil: undefined, freq: 2 }),
      chat_name: field,
      user_id: field,
      user_name: field,
      message_id: field,
      threadId: fc.oneof({ arbitrary: fc.constant(undefined), weight: 12 }, { arbitrary: valid, weight: 1 }),
    });

    const outcomes = { accepted: 0, refused: 0 };
    let key = 0;
    await fc.assert(
      fc.asyncProperty(body, async (generated) => {
        const sent = JSON.parse(JSON.stringify(generated)) as Json;
        // A fresh Idempotency-Key: a reused message_id must not turn a valid body into a 422.
        const answer = await g.send(sent as never, { 'idempotency-key': `k${key++}` });
        if (documentAccepts(sent)) {
          expect(answer.status, JSON.stringify(sent)).toBe(202);
          expect(accepted(answer.body)).toBe(true);
          outcomes.accepted++;
        } else {
          expect(answer.status, JSON.stringify(sent)).toBe(400);
          expect(answer.body['code']).toBe('TL_BAD_REQUEST');
          expect(refused(answer.body)).toBe(true);
          outcomes.refused++;
        }
      }),
      { numRuns: 150 },
    );
    expect(outcomes.accepted).toBeGreaterThan(20);
    expect(outcomes.refused).toBeGreaterThan(20);

    const delivered = await g.receiver.waitFor(outcomes.accepted);
    expect(delivered.some((received) => received.body.in_reply_to !== undefined)).toBe(true);
    for (const received of delivered) expect(delivery(received.body), JSON.stringify(received.body)).toBe(true);
  });

  it('answers every documented refusal in its documented schema', async () => {
    const g = await start({
      env: {
        THREADLINE_WEBHOOK_TOKEN: TOKEN,
        THREADLINE_OUTBOX_MAX_PER_CHAT: '1',
        THREADLINE_OUTBOX_MAX_PENDING: '3',
        THREADLINE_DELIVERY_MAX_ATTEMPTS: '100',
      },
    });
    const { status, document } = await served(g);
    expect(status).toBe(200);
    const answers = new Map<number, { body: unknown; headers: Headers }>();
    const record = (answer: { status: number; body: unknown; headers: Headers }) => answers.set(answer.status, answer);

    record(await g.send({ chat_id: 'c', text: 'x' }));
    record(await g.send({ chat_id: 'c' } as never, auth));
    record(await g.send({ chat_id: 'c', text: 'x'.repeat(65 * 1024) }, auth));
    const plain = await fetch(`${g.url}/v1/messages`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'chat_id=c&text=x' });
    record({ status: plain.status, body: await plain.json(), headers: plain.headers });
    record(await g.send({ chat_id: 'k', text: 'first', message_id: 'm' }, auth));
    record(await g.send({ chat_id: 'k', text: 'second', message_id: 'm' }, auth));
    await g.receiver.waitFor(1);
    // Replies fail for an hour from here: one chat's outbox fills up, then the whole outbox.
    g.receiver.failNext(1_000, 503, '3600');
    const accept = async (chat_id: string, pending: number) => {
      expect((await g.send({ chat_id, text: 'x' }, auth)).status).toBe(202);
      await until(async () => (await outboxPending(g)) === pending);
    };
    await accept('full', 1);
    await accept('other', 2);
    record(await g.send({ chat_id: 'full', text: 'x' }, auth));
    await accept('third', 3);
    record(await g.send({ chat_id: 'fourth', text: 'x' }, auth));

    expect([...answers.keys()].sort()).toEqual([202, 400, 401, 413, 415, 422, 429, 503]);
    for (const [code, answer] of answers) {
      expect(validatorOf(responseSchema(document, code))(answer.body), `${code} ${JSON.stringify(answer.body)}`).toBe(true);
      const documentedHeaders = Object.keys(messages(document)['responses'][String(code)]['headers'] ?? {});
      for (const header of documentedHeaders.filter((name) => name === 'retry-after')) expect(answer.headers.get(header), `${code} ${header}`).toMatch(/^\d+$/);
    }
  });
});
