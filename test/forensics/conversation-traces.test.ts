import { describe, expect, it } from 'vitest';
import { summarizeTraces } from '../../src/forensics/conversation-traces.js';
import { deliverAttributes, hexId, mismatchEvent, stamped, storedSpan, traceOf, turnTrace } from './stored-spans.js';

const A: [string, string] = ['webhook', 'chat-a'];
const B: [string, string] = ['webhook', 'chat-b'];

describe('summarizeTraces', () => {
  it('gives each trace its root, its deliveries in order with their outcome, and the root links; newest first', () => {
    const turn = turnTrace(A, 1_000);
    const reply = storedSpan({ name: 'gateway.deliver', traceId: turn.traceId, parentSpanId: turn.turn.spanId, startMs: 1_010, attributes: deliverAttributes('m/1', 'reply', 'origin', A, A) });
    const stray = storedSpan({
      name: 'gateway.deliver',
      traceId: turn.traceId,
      parentSpanId: turn.turn.spanId,
      startMs: 1_020,
      status: 'error',
      statusMessage: 'receiver answered 503',
      attributes: deliverAttributes('m/2', 'reply', 'origin', A, B),
      events: [mismatchEvent(A, B), { name: 'exception', timeMs: 1_021, attributes: {} }],
    });
    const cronTrace = hexId(32);
    const cronRun = storedSpan({ name: 'cron.run', traceId: cronTrace, startMs: 5_000, endMs: 5_040, attributes: stamped(...A), links: [{ traceId: turn.traceId, spanId: turn.tool.spanId }] });
    const [newest, older] = summarizeTraces([traceOf(turn.message, turn.turn, turn.tool, reply, stray), traceOf(cronRun)]);
    expect(newest).toMatchObject({ traceId: cronTrace, root: { name: 'cron.run', kind: 'cron run', durationMs: 40 }, deliveries: [], links: [{ traceId: turn.traceId }] });
    expect(older!.root).toMatchObject({ name: 'gateway.message', kind: 'turn', routing: { chatId: 'chat-a' } });
    expect(older!.spanCount).toBe(5);
    expect(older!.deliveries.map((d) => [d.id, d.target, d.outcome, d.mismatch, d.destination?.chatId])).toEqual([
      ['m/1', 'origin', 'sent', false, 'chat-a'],
      ['m/2', 'origin', 'failed', true, 'chat-b'],
    ]);
    expect(older!.deliveries[1]!.error).toBe('receiver answered 503');
  });

  it('a trace whose spans form a cycle (malformed) still gets a root: its earliest span', () => {
    const traceId = hexId(32);
    const [aId, bId] = [hexId(16), hexId(16)];
    const a = storedSpan({ name: 'a', traceId, spanId: aId, parentSpanId: bId, startMs: 2 });
    const b = storedSpan({ name: 'b', traceId, spanId: bId, parentSpanId: aId, startMs: 1 });
    expect(summarizeTraces([traceOf(a, b)])[0]!.root.name).toBe('b');
  });
});

describe('summarizeTraces and forensic copies', () => {
  it('reads a forensic copy (its trace not sampled) as the span it copies, a delivery of its own trace', () => {
    const copy = storedSpan({
      name: 'threadline.forensic',
      traceId: hexId(32),
      status: 'error',
      attributes: { ...deliverAttributes('m1/1', 'reply', 'origin', ['webhook', 'c1'], ['webhook', 'c1']), 'threadline.forensic.span_name': 'gateway.deliver' },
      events: [{ name: 'exception', timeMs: 0, attributes: {} }],
    });
    const [summary] = summarizeTraces([traceOf(copy)]);
    expect(summary!.root.name).toBe('gateway.deliver');
    expect(summary!.deliveries).toMatchObject([{ id: 'm1/1', outcome: 'failed' }]);
  });
});
