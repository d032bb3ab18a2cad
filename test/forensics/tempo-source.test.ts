import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempoSource, traceQl } from '../../src/forensics/tempo-source.js';
import type { TraceQuery } from '../../src/forensics/trace-source.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';
import { startFakeTempo, type FakeTempo } from '../helpers/fake-tempo.js';
import { writeForensicsTraces, type ForensicsTraces } from '../helpers/forensics-traces.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('tempo-source');
let written: ForensicsTraces;
let fake: FakeTempo;
let source: TempoSource;
const fakes: FakeTempo[] = [];

async function fakeTempo(): Promise<FakeTempo> {
  const started = await startFakeTempo();
  fakes.push(started);
  started.traces.addFile(written.path);
  return started;
}

beforeAll(async () => {
  written = await writeForensicsTraces(tempDir());
  fake = await fakeTempo();
  source = new TempoSource(fake.url);
});
afterAll(async () => {
  await Promise.all(fakes.map((started) => started.close()));
});

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

/** The TraceQL of each search the fake received since `from`. */
function searchedSince(from: number): string[] {
  return fake.requests
    .slice(from)
    .filter((request) => request.path === '/api/search')
    .map((request) => request.query.get('q')!);
}

describe('traceQl', () => {
  it('writes one spanset filter, values quoted and escaped', () => {
    expect(traceQl('threadline', { operation: 'gateway.deliver', attributes: { 'chat.id': 'a "b" \\ c' }, errorOnly: true })).toBe(
      '{ resource.service.name = "threadline" && name = "gateway.deliver" && status = error && span.chat.id = "a \\"b\\" \\\\ c" }',
    );
  });
});

describe('TempoSource', () => {
  it("finds the service's deliveries with TraceQL, the errored one first, each trace fetched whole", async () => {
    const from = fake.requests.length;
    const traces = await source.search(query());
    expect(traces.map((trace) => trace.traceId)).toEqual([written.misroute, written.later, written.turn]);
    expect(searchedSince(from)).toEqual([
      '{ resource.service.name = "threadline" && name = "gateway.deliver" && status = error }',
      '{ resource.service.name = "threadline" && name = "threadline.forensic" && status = error }',
      '{ resource.service.name = "threadline" && name = "gateway.deliver" }',
      '{ resource.service.name = "threadline" && name = "threadline.forensic" }',
    ]);
    const search = fake.requests.slice(from).find((request) => request.path === '/api/search')!;
    expect(search.query.get('start')).toBe(String(Math.floor((written.startMs - 1_000) / 1000)));
    expect(search.query.get('limit')).toBe('20');
    const misroute = traces[0]!;
    const cron = misroute.spans.find((span) => span.name === 'cron.run')!;
    const deliver = misroute.spans.find((span) => span.name === 'gateway.deliver')!;
    expect(deliver).toMatchObject({
      parentSpanId: cron.spanId,
      service: 'threadline',
      status: 'error',
      statusMessage: 'destination differs from origin',
      attributes: { 'delivery.id': 'd-cron', 'delivery.attempt': 2 },
    });
    expect(deliver.events.map((event) => event.name)).toEqual(['routing.mismatch']);
    expect(cron.links).toEqual([{ traceId: written.turn, spanId: written.turnDeliverSpanId }]);
    expect(traces[2]!.spans).toHaveLength(3);
  });

  it('fetches each trace once, whatever the searches found it by', async () => {
    const from = fake.requests.length;
    await source.search(query({ chatId: 'c1' }));
    const fetched = fake.requests.slice(from).filter((request) => request.path.startsWith('/api/traces/'));
    expect(fetched.map((request) => request.path).sort()).toEqual([`/api/traces/${written.misroute}`, `/api/traces/${written.turn}`].sort());
  });

  it('keeps the errored deliveries when the limit cuts, fetching no more than the limit', async () => {
    const from = fake.requests.length;
    expect((await source.search(query({ limit: 1 }))).map((trace) => trace.traceId)).toEqual([written.misroute]);
    expect(fake.requests.slice(from).filter((request) => request.path.startsWith('/api/traces/'))).toHaveLength(1);
  });

  it('finds a chat by where a delivery went as well as by its origin', async () => {
    expect((await source.search(query({ chatId: 'c2' }))).map((trace) => trace.traceId)).toEqual([written.misroute]);
    expect(await source.search(query({ chatId: 'c9' }))).toEqual([]);
  });

  it('finds a conversation by chat and thread', async () => {
    const from = fake.requests.length;
    const conversation = query({ purpose: 'conversation', chatId: 'c3', threadId: 't9' });
    expect((await source.search(conversation)).map((trace) => trace.traceId)).toEqual([written.thread]);
    expect(searchedSince(from)).toEqual(['{ resource.service.name = "threadline" && span.chat.id = "c3" && span.chat.thread.id = "t9" }']);
    expect(await source.search({ ...conversation, threadId: 't8' })).toEqual([]);
  });

  it('gets a trace by id, also one Tempo lists without leading zeros, and nothing for an unknown id', async () => {
    expect(written.turn.startsWith('0000000000000000')).toBe(true);
    const turn = await source.get(written.turn);
    expect(turn?.spans.map((span) => span.name).sort()).toEqual(['agent.turn', 'gateway.deliver', 'gateway.message']);
    expect(await source.get('0123456789abcdef0123456789abcdef')).toBeUndefined();
  });

  it('says when a trace a search listed is gone when fetched', async () => {
    const forgetful = await fakeTempo();
    const forgetfulSource = new TempoSource(forgetful.url);
    expect(forgetfulSource.warnings()).toEqual([]);
    // Tempo dropping the trace between the search and the fetch: the fetch finds nothing.
    const originalFetch = globalThis.fetch;
    globalThis.fetch = async (input, init) =>
      String(input).includes(`/api/traces/${written.turn}`) ? new Response('', { status: 404 }) : originalFetch(input, init);
    try {
      expect((await forgetfulSource.search(query())).map((trace) => trace.traceId)).toEqual([written.misroute, written.later]);
    } finally {
      globalThis.fetch = originalFetch;
    }
    expect(forgetfulSource.warnings()).toEqual([
      `tempo ${forgetful.url} listed 1 trace in a search that it no longer had when asked (retention or compaction in between); left out.`,
    ]);
  });

  it('leaves out a trace Tempo refuses as too large (422) and says so, instead of failing the search', async () => {
    const tempo = await fakeTempo();
    const source = new TempoSource(tempo.url);
    // modules/frontend/combiner/trace_by_id.go: 422 "trace exceeds max size" over max_bytes_per_trace.
    const originalFetch = globalThis.fetch;
    globalThis.fetch = async (input, init) =>
      String(input).includes(`/api/traces/${written.turn}`) ? new Response('trace exceeds max size (max bytes: 5000000)', { status: 422 }) : originalFetch(input, init);
    try {
      expect((await source.search(query())).map((trace) => trace.traceId)).toEqual([written.misroute, written.later]);
    } finally {
      globalThis.fetch = originalFetch;
    }
    expect(source.warnings()).toEqual([`tempo ${tempo.url} refused 1 trace as larger than its max_bytes_per_trace (422); left out.`]);
  });

  it('has no viewer link of its own', () => {
    expect(source.link()).toBeUndefined();
    expect(source.description).toBe(`tempo ${fake.url}`);
  });

  it('fetches at most 8 traces at once', async () => {
    const many = await fakeTempo();
    for (let index = 0; index < 20; index++) {
      const traceId = (index + 1).toString(16).padStart(32, 'a');
      many.traces.add({
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'threadline' } }] },
            scopeSpans: [
              {
                scope: { name: 'threadline' },
                spans: [
                  {
                    traceId,
                    spanId: 'bbbbbbbbbbbbbbbb',
                    name: 'gateway.deliver',
                    kind: 1,
                    startTimeUnixNano: String(BigInt(written.startMs) * 1_000_000n),
                    endTimeUnixNano: String(BigInt(written.startMs + 1) * 1_000_000n),
                    attributes: [],
                    status: { code: 0 },
                  },
                ],
              },
            ],
          },
        ],
      });
    }
    let active = 0;
    let most = 0;
    const counting = new TempoSource(many.url);
    const originalFetch = globalThis.fetch;
    globalThis.fetch = async (...args: Parameters<typeof fetch>) => {
      active++;
      most = Math.max(most, active);
      try {
        return await originalFetch(...args);
      } finally {
        active--;
      }
    };
    try {
      expect(await counting.search(query({ limit: 100 }))).toHaveLength(23);
    } finally {
      globalThis.fetch = originalFetch;
    }
    expect(most).toBeLessThanOrEqual(8);
    expect(most).toBeGreaterThan(2);
  });
});

describe('TempoSource: failures', () => {
  it.each([
    ['status-500', /answered 500: internal error: storage is down/],
    ['empty', /answered 200 with an empty body/],
    ['malformed', /answered with something that is not JSON/],
    ['not-traces', /answered a search with something that is not Tempo's search result|not OTLP\/JSON traces/],
    ['refuse', /refused the connection; check that it is running and listening at 127\.0\.0\.1:\d+/],
  ] as const)('a store that fails with %s gives TL_TRACE_SOURCE saying so', async (failure, message) => {
    const failing = await fakeTempo();
    const failingSource = new TempoSource(failing.url);
    await failing.fail(failure);
    for (const attempt of [failingSource.search(query()), failingSource.get(written.turn)]) {
      const error = assertThreadlineError(await rejectionOf(attempt), 'TL_TRACE_SOURCE');
      expect(error.message).toMatch(new RegExp(`^tempo ${failing.url}`));
      expect(error.message).toMatch(message);
    }
  });

  it('a URL that is not Tempo answers 404 to the search, said as such', async () => {
    const error = assertThreadlineError(await rejectionOf(new TempoSource(`${fake.url}/grafana`).search(query())), 'TL_TRACE_SOURCE');
    expect(error.message).toMatch(/\(GET http:\/\/127\.0\.0\.1:\d+\/grafana\/api\/search\) answered 404: 404 page not found/);
  });

  it('sends user:password as Basic auth and never prints them', async () => {
    const guarded = await fakeTempo();
    const withCredentials = guarded.url.replace('http://', 'http://reader:s3cret@');
    const guardedSource = new TempoSource(withCredentials);
    await guardedSource.search(query());
    expect(guarded.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('reader:s3cret').toString('base64')}`);
    expect(guardedSource.description).not.toMatch(/s3cret|reader/);
    await guarded.fail('status-500');
    const error = assertThreadlineError(await rejectionOf(guardedSource.get(written.turn)), 'TL_TRACE_SOURCE');
    expect(error.message).not.toMatch(/s3cret|reader/);
  });
});
