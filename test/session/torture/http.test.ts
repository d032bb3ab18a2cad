// Round trips through a real node:http server in this process: the baggage header goes in,
// the routing comes back out. The server never takes routing from headers (pitfall: Routing taken from inbound baggage): it
// handles each message in the session its payload names, as a platform webhook would.
import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { propagation } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, inboundContext, isSessionNamespaceKey, type Session } from '../../../src/session/index.js';
import {
  BAGGAGE_FIELDS,
  SESSIONS,
  Probe,
  Semaphore,
  expectIsolation,
  forEachSession,
  hop,
  makeSessions,
  observe,
  observedFromBaggage,
  rngFor,
  type Observed,
} from './harness.js';
import { runtimes, type SessionRuntime } from './runtime.js';

interface Payload {
  readonly index: number;
  readonly session: Session;
}

interface Reply {
  readonly baggage: string | null;
  /** The session active when the request handler was entered: must be none. */
  readonly atEntry: Observed | null;
  /** What inboundContext() made of the headers: no session, no threadline baggage. */
  readonly inboundSession: Observed | null;
  readonly inboundSessionKeys: number;
  /** The session read while handling the message, after a hop. */
  readonly handled: Observed | null;
}

function messageServer(runtime: SessionRuntime): Server {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const atEntry = observe(runtime.current()) ?? null;
    const inbound = inboundContext(req.headers);
    const inboundBaggage = propagation.getBaggage(inbound.context)?.getAllEntries() ?? [];
    void (async () => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      const payload = JSON.parse(body) as Payload;
      const rng = rngFor('server', payload.index);
      const handled = await runtime.run(createSession(payload.session), async () => {
        await hop(rng);
        return observe(runtime.current()) ?? null;
      });
      const reply: Reply = {
        baggage: [req.headers.baggage ?? []].flat().join(',') || null,
        atEntry,
        inboundSession: observe(getSession(inbound.context)) ?? null,
        inboundSessionKeys: inboundBaggage.filter(([key]) => isSessionNamespaceKey(key)).length,
        handled,
      };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(reply));
    })().catch((error: unknown) => res.destroy(error as Error));
  });
}

/** POSTs with node:http through a keep-alive agent; reads in the response callback and on 'end'. */
function postWithHttp(probe: Probe, session: Session, url: string, agent: Agent, headers: Record<string, string>, body: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json' } }, (res) => {
      probe.read(session, 'http response callback');
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        probe.read(session, "http response 'end'");
        resolve(JSON.parse(text) as Reply);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(runtimes)('http: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'h');
  const n = sessions.length;
  let server: Server;
  let url: string;
  let agent: Agent;
  let inboundLeaks = 0;

  beforeAll(async () => {
    server = runtime.detached(() => messageServer(runtime));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/message`;
    agent = new Agent({ keepAlive: true, maxSockets: 64 });
  });

  afterAll(async () => {
    agent.destroy();
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  /** The checks shared by both clients; four reads. */
  function checkReply(probe: Probe, session: Session, reply: Reply): void {
    probe.compare(session, observedFromBaggage(reply.baggage ?? undefined), 'baggage the server received', BAGGAGE_FIELDS);
    probe.compare(undefined, reply.atEntry ?? undefined, 'server handler entry');
    probe.compare(undefined, reply.inboundSession ?? undefined, 'session from inboundContext');
    probe.compare(session, reply.handled ?? undefined, 'server handling the payload session');
    inboundLeaks += reply.inboundSessionKeys;
  }

  it('node:http client and server: baggage carries the caller’s session, routing never comes from headers', async () => {
    const probe = new Probe(runtime);
    inboundLeaks = 0;
    await forEachSession(runtime, sessions, 'http client', async (session, index, rng) => {
      await hop(rng);
      const headers = runtime.outboundHeaders(url);
      const reply = await postWithHttp(probe, session, url, agent, headers, JSON.stringify({ index, session }));
      probe.read(session, 'after the http round trip');
      checkReply(probe, session, reply);
    });
    expect(inboundLeaks, 'threadline baggage keys kept by inboundContext').toBe(0);
    await expectIsolation(probe, { reads: n * 7, spans: n * 3 });
  });

  it('fetch to the same server: baggage carries the caller’s session, and the session survives the await', async () => {
    const probe = new Probe(runtime);
    const slots = runtime.detached(() => new Semaphore(64));
    inboundLeaks = 0;
    await forEachSession(runtime, sessions, 'fetch', async (session, index, rng) => {
      await hop(rng);
      const reply = await slots.use(async () => {
        const response = await fetch(url, {
          method: 'POST',
          headers: { ...runtime.outboundHeaders(url), 'content-type': 'application/json' },
          body: JSON.stringify({ index, session }),
        });
        probe.read(session, 'after fetch resolved');
        return (await response.json()) as Reply;
      });
      probe.read(session, 'after the fetch round trip');
      checkReply(probe, session, reply);
    });
    expect(inboundLeaks, 'threadline baggage keys kept by inboundContext').toBe(0);
    await expectIsolation(probe, { reads: n * 6, spans: n * 2 });
  });
});
