// Pitfall "Replies that lose their thread": routing that must outlive its message (a watcher, a job, a restart) is captured
// as JSON and resumed later, here inside the handler of an unrelated session.
import { trace, type SpanContext } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { ORIGIN_LINK_ATTRIBUTE } from '../../../src/session/snapshot.js';
import { Mailbox, SESSIONS, Probe, expectIsolation, forEachSession, hop, makeSessions } from './harness.js';
import { runtimes } from './runtime.js';

describe.each(runtimes)('snapshots: $name runtime', (runtime) => {
  const captors = makeSessions(SESSIONS, 'k');
  const resumers = makeSessions(SESSIONS, 'r');
  const n = captors.length;

  afterEach(() => {
    trace.disable();
  });

  it('capture → JSON → resume in another session’s handler: the work and its root span carry the captured routing and link to the origin', async () => {
    const probe = new Probe(runtime);
    // runResumed starts its span on the global tracer.
    trace.setGlobalTracerProvider(probe.provider);
    const mailbox = runtime.detached(() => new Mailbox<string>());
    const origins: SpanContext[] = [];
    await Promise.all([
      forEachSession(runtime, captors, 'capture', async (session, index, rng) => {
        await hop(rng);
        await probe.tracer.startActiveSpan(probe.spanName('origin', session), async (span) => {
          await hop(rng);
          origins[index] = span.spanContext();
          mailbox.put(index, JSON.stringify(runtime.capture()));
          span.end();
        });
        probe.read(session, 'after capturing');
      }),
      forEachSession(runtime, resumers, 'resume', async (resumer, index, rng) => {
        const captured = captors[index]!;
        const snapshot: unknown = JSON.parse(await mailbox.take(index));
        probe.read(resumer, 'resumer, snapshot received');
        await runtime.resume(snapshot, probe.spanName('resumed', captured), async () => {
          probe.read(captured, 'resumed work');
          await hop(rng);
          probe.read(captured, 'resumed work after a hop');
        });
        probe.read(resumer, 'resumer after the resumed work');
      }),
    ]);

    await probe.provider.forceFlush();
    const indexOf = new Map(captors.map((session, index) => [session.sessionId, index]));
    const resumed = probe.exporter.getFinishedSpans().filter((span) => span.name.startsWith('resumed#'));
    expect(resumed).toHaveLength(n);
    const badLinks = resumed.filter((span) => {
      const origin = origins[indexOf.get(span.name.slice('resumed#'.length))!]!;
      const link = span.links[0];
      return (
        span.parentSpanContext !== undefined ||
        span.links.length !== 1 ||
        link?.context.traceId !== origin.traceId ||
        link.context.spanId !== origin.spanId ||
        (runtime.isolates && link.attributes?.[ORIGIN_LINK_ATTRIBUTE] !== 'origin')
      );
    });
    // Tracing context is OTel's in both runtimes: only the routing can go wrong.
    expect(badLinks.map((span) => span.name).slice(0, 5)).toEqual([]);
    await expectIsolation(probe, { reads: n * 5, spans: n * 7 });
  });
});
