import { context, propagation, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_OUTBOUND_POLICY,
  MAX_BAGGAGE_BYTES,
  MAX_BAGGAGE_MEMBERS,
  OUTBOUND_KEYS,
  createSession,
  names,
  outboundBaggageHeader,
  outboundHeaders,
  outboundKeysFor,
  withSession,
  type OutboundBaggagePolicy,
} from '../../src/session/index.js';
import { DOCUMENTED_DEFAULT_KEYS as DEFAULT_KEYS, HOST_RULES as RULES, manyForeignEntries, sessionContextWithForeign } from '../helpers/baggage.js';
import { startLoopbackServer, type LoopbackServer } from '../helpers/loopback-server.js';
import { parseBaggageHeader, useGlobalPropagator } from '../helpers/propagation.js';
import { FULL_SESSION, routingRecord } from '../helpers/sessions.js';

const session = createSession(FULL_SESSION);

/** The baggage keys `policy` lets through to `host` from FULL_SESSION plus a foreign entry, sorted. */
function keysSent(policy: OutboundBaggagePolicy, host: string | undefined): string[] {
  const baggage = propagation.getBaggage(sessionContextWithForeign({ tenant: 'acme' }))!;
  return Object.keys(parseBaggageHeader(outboundBaggageHeader(baggage, policy, host))).sort();
}

describe('DEFAULT_OUTBOUND_POLICY', () => {
  it('sends platform, chat, thread and session id to every host', () => {
    expect([...DEFAULT_OUTBOUND_POLICY.keys].sort()).toEqual([...DEFAULT_KEYS].sort());
    expect(DEFAULT_OUTBOUND_POLICY.hosts).toEqual([]);
  });

  it('never lists names among the keys that may leave at all', () => {
    expect(OUTBOUND_KEYS).not.toContain(names.CHAT_NAME);
    expect(OUTBOUND_KEYS).not.toContain(names.USER_NAME);
  });
});

describe('outboundKeysFor', () => {
  it.each([
    ['api.example.com', [names.CHAT_ID]],
    ['API.Example.COM', [names.CHAT_ID]],
    ['other.example.com', [names.SESSION_ID, names.CHAT_TYPE]],
    ['a.b.example.com', [names.SESSION_ID, names.CHAT_TYPE]],
    ['db.internal', []],
    ['example.com', DEFAULT_OUTBOUND_POLICY.keys],
    ['evilexample.com', DEFAULT_OUTBOUND_POLICY.keys],
    ['example.com.evil.net', DEFAULT_OUTBOUND_POLICY.keys],
    ['api.example.com.evil.net', DEFAULT_OUTBOUND_POLICY.keys],
    ['internal', DEFAULT_OUTBOUND_POLICY.keys],
  ])('%s gets %j', (host, keys) => {
    expect(outboundKeysFor(RULES, host)).toEqual(keys);
  });

  it('gives the default keys when the host is unknown', () => {
    expect(outboundKeysFor(RULES, undefined)).toEqual(DEFAULT_OUTBOUND_POLICY.keys);
  });

  it('lets the first matching rule win', () => {
    const suffixFirst: OutboundBaggagePolicy = { keys: [], hosts: [RULES.hosts[1]!, RULES.hosts[0]!] };
    expect(outboundKeysFor(suffixFirst, 'api.example.com')).toEqual([names.SESSION_ID, names.CHAT_TYPE]);
  });
});

describe('outboundBaggageHeader', () => {
  it('by default sends the default keys and foreign entries, not chat.type or user.id', () => {
    expect(keysSent(DEFAULT_OUTBOUND_POLICY, 'anywhere.org')).toEqual([...DEFAULT_KEYS, 'tenant'].sort());
  });

  it('sends chat.type and user.id only when configured', () => {
    const policy = { keys: [...DEFAULT_KEYS, names.CHAT_TYPE, names.USER_ID], hosts: [] };
    expect(keysSent(policy, undefined)).toEqual([...DEFAULT_KEYS, names.CHAT_TYPE, names.USER_ID, 'tenant'].sort());
  });

  it("applies the host's rule", () => {
    expect(keysSent(RULES, 'api.example.com')).toEqual([names.CHAT_ID, 'tenant']);
    expect(keysSent(RULES, 'db.internal')).toEqual(['tenant']);
  });

  it('keeps the values', () => {
    const baggage = propagation.getBaggage(sessionContextWithForeign({}))!;
    const sent = parseBaggageHeader(outboundBaggageHeader(baggage, DEFAULT_OUTBOUND_POLICY, undefined));
    expect(sent[names.CHAT_ID]).toBe(session.chatId);
    expect(sent[names.SESSION_ID]).toBe(session.sessionId);
  });

  it(`stays within ${MAX_BAGGAGE_MEMBERS} members and ${MAX_BAGGAGE_BYTES} bytes, session entries first`, () => {
    for (const [count, size] of [[300, 10], [100, 500], [3, 5000]] as const) {
      const ctx = sessionContextWithForeign(manyForeignEntries(count, size));
      const header = outboundBaggageHeader(propagation.getBaggage(ctx)!, DEFAULT_OUTBOUND_POLICY, undefined);
      expect(header.split(',').length).toBeLessThanOrEqual(MAX_BAGGAGE_MEMBERS);
      expect(Buffer.byteLength(header)).toBeLessThanOrEqual(MAX_BAGGAGE_BYTES);
      expect(parseBaggageHeader(header)[names.CHAT_ID]).toBe(session.chatId);
    }
  });
});

describe('outboundHeaders', () => {
  const span = trace.wrapSpanContext({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });

  it('writes nothing outside a session and span', () => {
    expect(outboundHeaders('https://api.example.com/')).toEqual({});
  });

  it('writes traceparent and the default baggage for the active context', () => {
    const headers = context.with(trace.setSpan(sessionContextWithForeign({}), span), () => outboundHeaders('https://x.org/'));
    expect(headers['traceparent']).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(Object.keys(parseBaggageHeader(headers['baggage'])).sort()).toEqual([...DEFAULT_KEYS].sort());
  });

  it('adds to the given headers and accepts a URL and an explicit context', () => {
    const headers = { accept: 'application/json' };
    const returned = outboundHeaders(new URL('https://x.org/'), headers, sessionContextWithForeign({}));
    expect(returned).toBe(headers);
    expect(parseBaggageHeader(returned['baggage'])[names.CHAT_ID]).toBe(session.chatId);
    expect(returned.accept).toBe('application/json');
  });

  describe('with host rules', () => {
    useGlobalPropagator({ outboundBaggage: RULES, inboundBaggage: false });

    it.each([
      ['https://api.example.com/v1', [names.CHAT_ID, 'tenant']],
      ['https://other.example.com:8443/', [names.CHAT_TYPE, names.SESSION_ID, 'tenant']],
      ['http://db.internal/', ['tenant']],
      ['https://elsewhere.org/', [...DEFAULT_KEYS, 'tenant'].sort()],
    ])('%s gets %j', (url, keys) => {
      const headers = outboundHeaders(url, {}, sessionContextWithForeign({ tenant: 'acme' }));
      expect(Object.keys(parseBaggageHeader(headers['baggage'])).sort()).toEqual(keys);
    });
  });
});

describe('end to end: fetch to a loopback server with outboundHeaders(url)', () => {
  let server: LoopbackServer;
  beforeAll(async () => {
    server = await startLoopbackServer();
  });
  afterAll(() => server.close());

  /** Fetches the server from inside FULL_SESSION with a foreign entry; returns the baggage received. */
  async function received(): Promise<Record<string, string>> {
    await context.with(sessionContextWithForeign({ tenant: 'acme' }), async () => {
      const response = await fetch(server.url, { headers: outboundHeaders(server.url) });
      await response.text();
    });
    const header = server.received.at(-1)?.headers['baggage'];
    expect(typeof header).toBe('string');
    return parseBaggageHeader(header as string);
  }

  describe('no rule for the host', () => {
    useGlobalPropagator({ outboundBaggage: DEFAULT_OUTBOUND_POLICY, inboundBaggage: false });

    it('receives the default keys and foreign baggage', async () => {
      expect(await received()).toEqual({ ...routingRecord(session, DEFAULT_KEYS), tenant: 'acme' });
    });
  });

  describe('an exact rule before a suffix rule that also matches', () => {
    useGlobalPropagator({
      outboundBaggage: {
        keys: DEFAULT_OUTBOUND_POLICY.keys,
        hosts: [
          { host: '127.0.0.1', keys: [names.CHAT_ID, names.USER_ID] },
          { host: '*.0.0.1', keys: [names.SESSION_ID] },
        ],
      },
      inboundBaggage: false,
    });

    it('receives what the exact rule allows', async () => {
      expect(await received()).toEqual({ [names.CHAT_ID]: session.chatId, [names.USER_ID]: session.userId, tenant: 'acme' });
    });
  });

  describe('a suffix rule', () => {
    useGlobalPropagator({
      outboundBaggage: { keys: DEFAULT_OUTBOUND_POLICY.keys, hosts: [{ host: '*.0.0.1', keys: [names.SESSION_ID, names.CHAT_TYPE] }] },
      inboundBaggage: false,
    });

    it('receives what the suffix rule allows', async () => {
      expect(await received()).toEqual({ [names.SESSION_ID]: session.sessionId, [names.CHAT_TYPE]: session.chatType, tenant: 'acme' });
    });
  });

  it('sends no session baggage outside a session', async () => {
    const response = await fetch(server.url, { headers: outboundHeaders(server.url) });
    await response.text();
    expect(server.received.at(-1)?.path).toBe('/');
    expect(server.received.at(-1)?.headers).not.toHaveProperty('baggage');
  });

  it('never sends names', async () => {
    const baggage = await received();
    expect(Object.values(baggage)).not.toContain(FULL_SESSION.chatName);
    expect(Object.values(baggage)).not.toContain(FULL_SESSION.userName);
  });
});

describe('withSession and outboundHeaders together', () => {
  it('sends the active session, not another one', () => {
    const headers = withSession({ ...FULL_SESSION, chatId: 'active' }, () => outboundHeaders('https://x.org/'));
    expect(parseBaggageHeader(headers['baggage'])[names.CHAT_ID]).toBe('active');
  });
});
