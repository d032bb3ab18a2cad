import { describe, expect, it } from 'vitest';
import { findLostInTraces } from '../../src/forensics/lost-in-traces.js';
import type { StoredSpan } from '../../src/forensics/trace-model.js';
import { deliverAttributes, hexId, stamped, storedSpan, traceOf } from './stored-spans.js';

const A: [string, string, string] = ['webhook', 'chat-a', '1'];
const MINUTE = 60_000;
const NOW = 100 * MINUTE;
const options = { now: NOW, lostAfterMs: 10 * MINUTE };

function exception(type: string) {
  return { name: 'exception', timeMs: 0, attributes: { 'exception.type': type } };
}

/** A delivery's router span at `startMs`, failed (with `error`) or sent. */
function routerSpan(id: string, kind: string, startMs: number, error?: string, extra: Record<string, unknown> = {}): StoredSpan {
  return storedSpan({
    name: 'gateway.deliver',
    traceId: hexId(32),
    startMs,
    attributes: { ...deliverAttributes(id, kind, 'origin', A, A), ...(extra as object) },
    ...(error === undefined ? {} : { status: 'error' as const, statusMessage: error, events: [exception('TL_DELIVERY_FAILED')] }),
  });
}

function retrySpan(id: string, kind: string, startMs: number, attempt: number, error?: string): StoredSpan {
  const span = routerSpan(id, kind, startMs, error, { 'delivery.attempt': attempt });
  const { 'delivery.target': _target, ...attributes } = span.attributes;
  return { ...span, attributes };
}

describe('findLostInTraces', () => {
  it('a delivery whose every attempt failed, older than lostAfter, is lost with its last error and attempts', () => {
    const first = routerSpan('cron:c1:1', 'cron', 50 * MINUTE, 'receiver answered 503');
    const second = retrySpan('cron:c1:1', 'cron', 51 * MINUTE, 2, 'receiver answered 400 (refused)');
    const [lost, ...more] = findLostInTraces([traceOf(first), traceOf(second)], options);
    expect(more).toEqual([]);
    expect(lost).toMatchObject({
      type: 'lost',
      what: 'cron run',
      id: 'cron:c1:1',
      kind: 'cron',
      state: 'not sent',
      dueAt: 50 * MINUTE,
      destination: { chatId: 'chat-a', threadId: '1' },
      origin: { chatId: 'chat-a' },
      lastError: 'receiver answered 400 (refused)',
      attempts: 2,
      source: 'traces',
    });
  });

  it('a retry that succeeded, a delivery still within lostAfter, a replayed one and a refused misroute are not lost', () => {
    const retried = [routerSpan('r1', 'reply', 50 * MINUTE, 'timeout'), retrySpan('r1', 'reply', 52 * MINUTE, 2)];
    const recent = [routerSpan('r2', 'reply', NOW - 10 * MINUTE, 'timeout')];
    const replayed = [routerSpan('r3', 'reply', 50 * MINUTE, undefined, { 'delivery.replayed': true })];
    const refused = storedSpan({ ...routerSpan('r4', 'reply', 50 * MINUTE), status: 'error', events: [exception('TL_MISROUTE_REFUSED')] });
    const traces = [...retried, ...recent, ...replayed, refused].map((span) => traceOf(span));
    expect(findLostInTraces(traces, options)).toEqual([]);
  });

  it('queued and never sent, and background work that failed before its delivery was recorded', () => {
    const queued = routerSpan('n1', 'notification', 40 * MINUTE, undefined, { 'delivery.queued': true });
    const cronRun = storedSpan({
      name: 'cron.run',
      traceId: hexId(32),
      startMs: 30 * MINUTE,
      status: 'error',
      statusMessage: 'webhook has no home channel',
      attributes: { ...stamped(...A), 'delivery.id': 'cron:c2:5', 'delivery.kind': 'cron' },
    });
    const lost = findLostInTraces([traceOf(queued), traceOf(cronRun)], options);
    expect(lost.map((work) => [work.id, work.what, work.state])).toEqual([
      ['n1', 'watcher notification', 'queued, never sent'],
      ['cron:c2:5', 'cron run', 'not recorded'],
    ]);
    expect(lost[1]).toMatchObject({ origin: { chatId: 'chat-a' }, lastError: 'webhook has no home channel', originTraceId: cronRun.traceId });
    expect(lost[1]!.attempts).toBeUndefined();
  });

  it('filters by chat', () => {
    const traces = [traceOf(routerSpan('r5', 'reply', 10 * MINUTE, 'down'))];
    expect(findLostInTraces(traces, { ...options, chatId: 'chat-a', threadId: '1' })).toHaveLength(1);
    expect(findLostInTraces(traces, { ...options, chatId: 'chat-z' })).toEqual([]);
  });
});

describe('findLostInTraces and forensic copies (traces not sampled)', () => {
  /** A span as its forensic copy is exported: `threadline.forensic`, in a trace of its own, naming the one it copies. */
  function copied(span: StoredSpan, reason: string): StoredSpan {
    return {
      ...span,
      name: 'threadline.forensic',
      traceId: hexId(32),
      attributes: {
        ...span.attributes,
        'threadline.forensic.reason': reason,
        'threadline.forensic.span_name': span.name,
        'threadline.forensic.trace_id': span.traceId,
        'threadline.forensic.span_id': span.spanId,
      },
    };
  }

  it('a failed delivery known from its copy alone is lost, naming the trace that was not sampled', () => {
    const failed = routerSpan('f1', 'reply', 50 * MINUTE, 'receiver answered 400 (refused)');
    const [lost, ...more] = findLostInTraces([traceOf(copied(failed, 'failed'))], options);
    expect(more).toEqual([]);
    expect(lost).toMatchObject({ id: 'f1', state: 'not sent', lastError: 'receiver answered 400 (refused)', sampledOut: { traceId: failed.traceId, spanId: failed.spanId } });
  });

  it('a misroute whose copy shows it only queued is not judged: its send, unremarkable, was not kept', () => {
    const queued = storedSpan({
      ...routerSpan('q1', 'reply', 50 * MINUTE, undefined, { 'delivery.queued': true }),
      status: 'error',
      events: [{ name: 'routing.mismatch', timeMs: 0, attributes: {} }],
    });
    expect(findLostInTraces([traceOf(copied(queued, 'misroute'))], options)).toEqual([]);
  });

  it('a failure followed by the copy of the retry that went through is not lost', () => {
    const copies = [copied(routerSpan('t1', 'reply', 50 * MINUTE, 'timeout'), 'failed'), copied(retrySpan('t1', 'reply', 51 * MINUTE, 2), 'retry')];
    expect(findLostInTraces(copies.map((span) => traceOf(span)), options)).toEqual([]);
  });
});
