import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JaegerSource } from '../../src/forensics/jaeger-source.js';
import type { StoredTrace } from '../../src/forensics/trace-model.js';
import type { TraceQuery } from '../../src/forensics/trace-source.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';
import { startFakeJaeger, type FakeJaeger, type FakeJaegerOptions } from '../helpers/fake-jaeger.js';
import { startFakeTempo } from '../helpers/fake-tempo.js';
import { writeForensicsTraces, type ForensicsTraces } from '../helpers/forensics-traces.js';
import { startLoopbackServer } from '../helpers/loopback-server.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('jaeger-source');
let written: ForensicsTraces;
const fakes: FakeJaeger[] = [];

beforeAll(async () => {
  written = await writeForensicsTraces(tempDir());
});
afterAll(async () => {
  await Promise.all(fakes.map((fake) => fake.close()));
});

async function fakeJaeger(options: FakeJaegerOptions): Promise<FakeJaeger> {
  const fake = await startFakeJaeger(options);
  fakes.push(fake);
  fake.traces.addFile(written.path);
  return fake;
}

function query(overrides: Partial<TraceQuery> = {}): TraceQuery {
  return {
    service: 'threadline',
    since: written.startMs - 1_000,
    until: written.startMs + 60_000,
    purpose: 'deliveries',
    limit: 20,
    ...overrides,
  };
}

/** A trace with times to the µs (the UI API's precision) and spans in a stable order, to compare across APIs. */
function comparable(trace: StoredTrace | undefined): unknown {
  if (trace === undefined) return undefined;
  const us = (ms: number) => Math.floor(Math.round(ms * 1e6) / 1e3);
  return {
    traceId: trace.traceId,
    spans: [...trace.spans]
      .sort((a, b) => a.spanId.localeCompare(b.spanId))
      .map((span) => ({ ...span, startMs: us(span.startMs), endMs: us(span.endMs), events: span.events.map((event) => ({ ...event, timeMs: us(event.timeMs) })) })),
  };
}

const MODES: [string, FakeJaegerOptions][] = [
  ['api_v3 of Jaeger 2.12', { mode: 'v3', version: '2.12' }],
  ['api_v3 of Jaeger 2.20', { mode: 'v3', version: '2.20' }],
  ['the UI API of an older Jaeger', { mode: 'v1' }],
  ['api_v3 of a Jaeger without the UI search', { mode: 'v3', version: '2.20', uiSearch: false }],
];

describe.each(MODES)('JaegerSource against %s', (_, options) => {
  let fake: FakeJaeger;
  let source: JaegerSource;
  beforeAll(async () => {
    fake = await fakeJaeger(options);
    source = new JaegerSource(fake.url);
  });

  it('detects the API once and uses it', async () => {
    expect(await source.detectApi()).toBe(options.mode);
    await source.search(query());
    await source.search(query({ purpose: 'conversation', chatId: 'c3' }));
    const probes = fake.requests.filter((request) => request.path.endsWith('/services'));
    expect(probes.map((request) => request.path)).toEqual(['/api/v3/services', '/api/services']);
    // Searches by attribute go to the UI API while there is one: Jaeger 2.12 ignores them over api_v3.
    const searches = fake.requests.filter((request) => request.path.endsWith('/traces'));
    const byAttribute = (request: (typeof searches)[number]) => request.query.has('tags') || request.query.has('query.attributes');
    expect(new Set(searches.filter((request) => !byAttribute(request)).map((request) => request.path))).toEqual(
      new Set([options.mode === 'v3' ? '/api/v3/traces' : '/api/traces']),
    );
    expect(new Set(searches.filter(byAttribute).map((request) => request.path))).toEqual(
      new Set([options.uiSearch === false ? '/api/v3/traces' : '/api/traces']),
    );
  });

  it("finds the service's deliveries, the errored one first, each trace whole", async () => {
    const traces = await source.search(query());
    expect(traces.map((trace) => trace.traceId)).toEqual([written.misroute, written.later, written.turn]);
    const misroute = traces[0]!;
    expect(misroute.spans.map((span) => span.name).sort()).toEqual(['cron.run', 'gateway.deliver']);
    const cron = misroute.spans.find((span) => span.name === 'cron.run')!;
    const deliver = misroute.spans.find((span) => span.name === 'gateway.deliver')!;
    expect(deliver).toMatchObject({
      parentSpanId: cron.spanId,
      service: 'threadline',
      status: 'error',
      statusMessage: 'destination differs from origin',
      attributes: { 'delivery.id': 'd-cron', 'delivery.attempt': 2, 'routing.destination.chat.id': 'c2' },
    });
    expect(deliver.events.map((event) => [event.name, event.attributes['routing.destination.chat.id']])).toEqual([['routing.mismatch', 'c2']]);
    expect(cron.links).toEqual([{ traceId: written.turn, spanId: written.turnDeliverSpanId }]);
    expect(deliver.startMs).toBeCloseTo(written.startMs + 1_010, 2);
    expect(deliver.endMs).toBeCloseTo(written.startMs + 1_020, 2);
    expect(traces[2]!.spans).toHaveLength(3);
  });

  it('keeps the errored deliveries when the limit cuts, where Jaeger can search by error', async () => {
    // Jaeger 2.12 has no search by error over either API (see fake-jaeger.ts): the newest delivery wins.
    const expected = options.version === '2.12' ? written.later : written.misroute;
    expect((await source.search(query({ limit: 1 }))).map((trace) => trace.traceId)).toEqual([expected]);
  });

  it('finds a chat by where a delivery went as well as by its origin', async () => {
    expect((await source.search(query({ chatId: 'c2' }))).map((trace) => trace.traceId)).toEqual([written.misroute]);
    expect((await source.search(query({ chatId: 'c1' }))).map((trace) => trace.traceId)).toEqual([written.misroute, written.turn]);
    expect(await source.search(query({ chatId: 'c9' }))).toEqual([]);
  });

  it('finds a conversation by chat and thread', async () => {
    const conversation = query({ purpose: 'conversation', chatId: 'c3', threadId: 't9' });
    expect((await source.search(conversation)).map((trace) => trace.traceId)).toEqual([written.thread]);
    expect(await source.search({ ...conversation, threadId: 't8' })).toEqual([]);
  });

  it('finds nothing outside the window', async () => {
    expect(await source.search(query({ since: written.startMs + 10_000 }))).toEqual([]);
  });

  it('gets a trace by id, also one whose id Jaeger writes in 16 digits, and nothing for an unknown id', async () => {
    expect(written.turn.startsWith('0000000000000000')).toBe(true);
    const turn = await source.get(written.turn);
    expect(turn?.spans.map((span) => span.name).sort()).toEqual(['agent.turn', 'gateway.deliver', 'gateway.message']);
    expect(await source.get('0123456789abcdef0123456789abcdef')).toBeUndefined();
  });

  it('links to the trace in the Jaeger UI', () => {
    expect(source.link(written.turn)).toBe(`${fake.url}/trace/${written.turn}`);
    expect(source.description).toBe(`jaeger ${fake.url}`);
  });
});

describe('JaegerSource: the same traces through every API', () => {
  it('api_v3 and the UI API give the same model', async () => {
    const v3 = new JaegerSource((await fakeJaeger({ mode: 'v3', version: '2.20' })).url);
    const v1 = new JaegerSource((await fakeJaeger({ mode: 'v1' })).url);
    for (const id of [written.turn, written.misroute, written.thread]) {
      expect(comparable(await v1.get(id))).toEqual(comparable(await v3.get(id)));
    }
  });
});

describe('JaegerSource: failures', () => {
  it('says a server that is not Jaeger is not one', async () => {
    const notJaeger = await startLoopbackServer();
    const tempo = await startFakeTempo();
    try {
      for (const url of [notJaeger.url, tempo.url]) {
        const error = assertThreadlineError(await rejectionOf(new JaegerSource(url).search(query())), 'TL_TRACE_SOURCE');
        expect(error.message).toMatch(/neither \/api\/v3\/services nor \/api\/services answered as Jaeger does; check that --jaeger is the query service's URL/);
      }
    } finally {
      await notJaeger.close();
      await tempo.close();
    }
  });

  it('says a proxy refused it (401, 403) rather than "not Jaeger"', async () => {
    const proxy = createServer((_request, response) => response.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden by the proxy'));
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const error = assertThreadlineError(await rejectionOf(new JaegerSource(url).search(query())), 'TL_TRACE_SOURCE');
      expect(error.message).toMatch(/answered 403: forbidden by the proxy/);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it.each([
    ['status-500', /answered 500: \{"error":\{"httpCode":500|answered 500: internal error: storage is down/],
    ['empty', /answered 200 with an empty body/],
    ['malformed', /answered with something that is not JSON \("\{"data": \[\{"traceID": "ab"\)/],
    ['refuse', /refused the connection; check that it is running and listening at 127\.0\.0\.1:\d+/],
  ] as const)('a store that fails with %s gives TL_TRACE_SOURCE saying so', async (failure, message) => {
    const fake = await fakeJaeger({ mode: 'v3' });
    const source = new JaegerSource(fake.url);
    await source.detectApi();
    await fake.fail(failure);
    for (const attempt of [source.search(query()), source.get(written.turn)]) {
      const error = assertThreadlineError(await rejectionOf(attempt), 'TL_TRACE_SOURCE');
      expect(error.message).toMatch(new RegExp(`^jaeger ${fake.url} \\(GET ${fake.url}/api/(v3/)?traces`));
      expect(error.message).toMatch(message);
    }
  });

  it('a store failing from the first request says so at the first URL it asked', async () => {
    const fake = await fakeJaeger({ mode: 'v3' });
    await fake.fail('status-500');
    const error = assertThreadlineError(await rejectionOf(new JaegerSource(fake.url).search(query())), 'TL_TRACE_SOURCE');
    expect(error.message).toBe(
      `jaeger ${fake.url} (GET ${fake.url}/api/v3/services) answered 500: internal error: storage is down; check the URL and the store's own log.`,
    );
  });

  it.each([
    ['v3', /answered with something that is not OTLP\/JSON traces: a JSON object without resourceSpans/],
    ['v1', /answered with something that is not Jaeger traces: it has no "data" array/],
  ] as const)('a %s answer that is JSON but not traces is malformed, naming the source', async (mode, message) => {
    const fake = await fakeJaeger({ mode });
    const source = new JaegerSource(fake.url);
    await source.detectApi();
    await fake.fail('not-traces');
    const searchError = assertThreadlineError(await rejectionOf(source.search(query())), 'TL_TRACE_SOURCE');
    expect(searchError.message).toMatch(new RegExp(`^jaeger ${fake.url} answered with something that is not (OTLP/JSON|Jaeger) traces`));
    const getError = assertThreadlineError(await rejectionOf(source.get(written.turn)), 'TL_TRACE_SOURCE');
    expect(getError.message).toMatch(new RegExp(`^jaeger ${fake.url} answered`));
    expect(getError.message).toMatch(message);
  });

  it('sends user:password as Basic auth and never prints them', async () => {
    const fake = await fakeJaeger({ mode: 'v3' });
    const withCredentials = fake.url.replace('http://', 'http://reader:s3cret%21@');
    const source = new JaegerSource(withCredentials);
    await source.search(query());
    expect(fake.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('reader:s3cret!').toString('base64')}`);
    expect(source.description).not.toMatch(/s3cret|reader/);
    expect(source.link(written.turn)).not.toMatch(/s3cret|reader/);
    await fake.fail('status-500');
    const error = assertThreadlineError(await rejectionOf(source.search(query())), 'TL_TRACE_SOURCE');
    expect(error.message).not.toMatch(/s3cret|reader/);
    await fake.fail('refuse');
    const refused = assertThreadlineError(await rejectionOf(source.get(written.turn)), 'TL_TRACE_SOURCE');
    expect(refused.message).not.toMatch(/s3cret|reader/);
  });
});
