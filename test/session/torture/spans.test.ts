// Span stamping: every span started at a boundary carries its own session's routing, and
// the processor reads the context a span was started with, not the active one (pitfall: Stamping from the active context).
// Probe.read starts a span at every read, so every other file checks stamping too.
import { context, type Context } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { Mailbox, SESSIONS, Probe, expectIsolation, forEachSession, hop, makeSessions } from './harness.js';
import { runtimes } from './runtime.js';

describe.each(runtimes)('span stamping: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'x');
  const n = sessions.length;

  it('spans started across awaits, timers, Promise.all and detached work are stamped with their session (or none)', async () => {
    const probe = new Probe(runtime);
    const handlerSpans = new Map<string, string>();
    await forEachSession(runtime, sessions, 'spans', async (session, _index, rng) => {
      await hop(rng);
      await probe.tracer.startActiveSpan(probe.spanName('handler', session), async (handler) => {
        handlerSpans.set(session.sessionId, handler.spanContext().spanId);
        await hop(rng);
        probe.read(session, 'child after an await');
        await new Promise<void>((resolve) => setTimeout(() => resolve(probe.read(session, 'child in setTimeout')), Math.floor(rng() * 3)));
        await new Promise<void>((resolve) => setImmediate(() => resolve(probe.read(session, 'child in setImmediate'))));
        await Promise.all([1, 2].map(async () => {
          await hop(rng);
          probe.read(session, 'child in Promise.all');
        }));
        runtime.detached(() => probe.read(undefined, 'detached, no session'));
        handler.end();
      });
    });
    // Trace context propagates in both runtimes: each child is parented by its handler span.
    await probe.provider.forceFlush();
    const orphans = probe.exporter
      .getFinishedSpans()
      .filter((span) => span.name.startsWith('child'))
      .filter((span) => span.parentSpanContext?.spanId !== handlerSpans.get(span.name.slice(span.name.lastIndexOf('#') + 1)));
    expect(orphans.map((span) => span.name).slice(0, 5)).toEqual([]);
    await expectIsolation(probe, { reads: n * 6, spans: n * 7 });
  });

  it('a span started with an explicit context carries that context’s session, not the active one', async () => {
    const probe = new Probe(runtime);
    // Each session hands its context to its neighbour, which starts a span in it.
    const contexts = runtime.detached(() => new Mailbox<Context>());
    await forEachSession(runtime, sessions, 'explicit', async (session, index, rng) => {
      await hop(rng);
      contexts.put(index, context.active());
      const neighbour = (index + 1) % n;
      const theirs = await contexts.take(neighbour);
      probe.read(session, 'active session when starting the span');
      probe.tracer.startSpan(probe.spanName('explicit', sessions[neighbour]), {}, theirs).end();
      await hop(rng);
      probe.read(session, 'after the explicit span');
    });
    await expectIsolation(probe, { reads: n * 2, spans: n * 3 });
  });
});
