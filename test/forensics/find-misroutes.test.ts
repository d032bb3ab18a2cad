import { describe, expect, it } from 'vitest';
import { findMisroutes } from '../../src/forensics/find-misroutes.js';
import type { StoredTrace } from '../../src/forensics/trace-model.js';
import { deliverAttributes, hexId, mismatchEvent, stamped, storedSpan, traceOf, turnTrace } from './stored-spans.js';

const A: [string, string, string] = ['webhook', 'chat-a', '1'];
const B: [string, string, string] = ['webhook', 'chat-b', '2'];

/** A source that has no other trace, counting what it is asked for. */
function sourceWith(traces: readonly StoredTrace[] = []) {
  const asked: string[] = [];
  return {
    asked,
    get: async (traceId: string) => {
      asked.push(traceId);
      return traces.find((trace) => trace.traceId === traceId);
    },
  };
}

describe('findMisroutes', () => {
  it('finds nothing in good deliveries: replies, resumed notifications, home and explicit sends', async () => {
    const turn = turnTrace(A);
    const reply = storedSpan({ name: 'gateway.deliver', traceId: turn.traceId, parentSpanId: turn.turn.spanId, attributes: deliverAttributes('m1/1', 'reply', 'origin', A, A) });
    const home = storedSpan({ name: 'gateway.deliver', traceId: turn.traceId, parentSpanId: turn.tool.spanId, attributes: deliverAttributes('m1/2', 'send', 'home', A, B) });
    const explicit = storedSpan({ name: 'gateway.deliver', traceId: turn.traceId, parentSpanId: turn.tool.spanId, attributes: deliverAttributes('m1/3', 'send', 'explicit', A, B) });
    const cronTrace = hexId(32);
    const cronRun = storedSpan({ name: 'cron.run', traceId: cronTrace, attributes: stamped(...A), links: [{ traceId: turn.traceId, spanId: turn.tool.spanId }] });
    const cronDeliver = storedSpan({ name: 'gateway.deliver', traceId: cronTrace, parentSpanId: cronRun.spanId, attributes: deliverAttributes('cron:c1:1', 'cron', 'origin', A, A) });
    // An outbox retry's span: no target, its own trace.
    const retry = storedSpan({ name: 'gateway.deliver', traceId: hexId(32), attributes: { ...deliverAttributes('m1/1', 'reply', 'origin', A, A), 'delivery.target': undefined as never } });
    const traces = [traceOf(turn.message, turn.turn, turn.tool, reply, home, explicit), traceOf(cronRun, cronDeliver), traceOf(retry)];
    expect(await findMisroutes(traces, sourceWith())).toEqual([]);
  });

  it("a guard-flagged delivery made in a stranger's context: both routings, the stranger's root as the divergence, the origin turn as the work", async () => {
    const origin = turnTrace(A, 1_000);
    const stranger = turnTrace(B, 2_000);
    // The delivery ran in B's context (a child of B's tool span) with A's captured routing.
    const deliver = storedSpan({
      name: 'gateway.deliver',
      traceId: stranger.traceId,
      parentSpanId: stranger.tool.spanId,
      startMs: 2_010,
      status: 'error',
      attributes: { ...deliverAttributes('proc:p1:done', 'notification', 'origin', A, B), 'delivery.origin.trace_id': origin.traceId, 'delivery.origin.span_id': origin.tool.spanId },
      events: [mismatchEvent(A, B)],
    });
    const source = sourceWith([traceOf(origin.message, origin.turn, origin.tool)]);
    const [misroute, ...more] = await findMisroutes([traceOf(stranger.message, stranger.turn, stranger.tool, deliver)], source);
    expect(more).toEqual([]);
    expect(misroute).toMatchObject({
      type: 'misroute',
      deliveryId: 'proc:p1:done',
      deliveryKind: 'notification',
      origin: { platform: 'webhook', chatId: 'chat-a', threadId: '1' },
      destination: { platform: 'webhook', chatId: 'chat-b', threadId: '2' },
      outcome: 'sent',
      detectedBy: 'guard',
      delivery: { spanId: deliver.spanId, traceId: stranger.traceId },
      divergedAt: { name: 'gateway.message', spanId: stranger.message.spanId, routing: { chatId: 'chat-b' } },
      work: { kind: 'turn', name: 'gateway.message', traceId: origin.traceId, spanId: origin.message.spanId },
    });
    expect(source.asked).toEqual([origin.traceId]);
  });

  it('the divergence is the first span of the chain stamped with another routing', async () => {
    const turn = turnTrace(A);
    const callback = storedSpan({ name: 'emitter callback', traceId: turn.traceId, parentSpanId: turn.tool.spanId, attributes: stamped(...B) });
    const deliver = storedSpan({ name: 'gateway.deliver', traceId: turn.traceId, parentSpanId: callback.spanId, attributes: deliverAttributes('m/1', 'reply', 'origin', A, B), events: [mismatchEvent(A, B)] });
    const [misroute] = await findMisroutes([traceOf(turn.message, turn.turn, turn.tool, callback, deliver)], sourceWith());
    expect(misroute!.divergedAt).toMatchObject({ name: 'emitter callback', spanId: callback.spanId });
    expect(misroute!.work).toMatchObject({ kind: 'turn', spanId: turn.message.spanId });
  });

  it('without the event, an origin delivery whose destination differs from its trace\'s routing is found ("trace")', async () => {
    const cronTrace = hexId(32);
    const cronRun = storedSpan({ name: 'cron.run', traceId: cronTrace, attributes: stamped(...A) });
    const deliver = storedSpan({ name: 'gateway.deliver', traceId: cronTrace, parentSpanId: cronRun.spanId, attributes: deliverAttributes('cron:c1:9', 'cron', 'origin', B, B) });
    const [misroute] = await findMisroutes([traceOf(cronRun, deliver)], sourceWith());
    expect(misroute).toMatchObject({ detectedBy: 'trace', origin: { chatId: 'chat-a' }, destination: { chatId: 'chat-b' }, divergedAt: { spanId: deliver.spanId }, work: { kind: 'cron run' } });
  });

  it('says refused when strict routing refused it, and filters by chat on either side', async () => {
    const turn = turnTrace(A);
    const refused = storedSpan({
      name: 'gateway.deliver',
      traceId: turn.traceId,
      parentSpanId: turn.turn.spanId,
      status: 'error',
      statusMessage: 'Refused a delivery whose destination differs',
      attributes: deliverAttributes('m/1', 'reply', 'origin', A, B),
      events: [mismatchEvent(A, B), { name: 'exception', timeMs: 1_002, attributes: { 'exception.type': 'TL_MISROUTE_REFUSED' } }],
    });
    const traces = [traceOf(turn.message, turn.turn, refused)];
    expect((await findMisroutes(traces, sourceWith()))[0]!.outcome).toBe('refused');
    expect(await findMisroutes(traces, sourceWith(), { chatId: 'chat-a' })).toHaveLength(1);
    expect(await findMisroutes(traces, sourceWith(), { chatId: 'chat-b', threadId: '2' })).toHaveLength(1);
    expect(await findMisroutes(traces, sourceWith(), { chatId: 'chat-b', threadId: '9' })).toEqual([]);
    expect(await findMisroutes(traces, sourceWith(), { chatId: 'chat-c' })).toEqual([]);
  });

  it('names an origin trace the source no longer has', async () => {
    const stranger = turnTrace(B);
    const gone = hexId(32);
    const deliver = storedSpan({
      name: 'gateway.deliver',
      traceId: stranger.traceId,
      parentSpanId: stranger.turn.spanId,
      attributes: { ...deliverAttributes('m/1', 'reply', 'origin', A, B), 'delivery.origin.trace_id': gone, 'delivery.origin.span_id': hexId(16) },
      events: [mismatchEvent(A, B)],
    });
    const [misroute] = await findMisroutes([traceOf(stranger.message, stranger.turn, deliver)], sourceWith());
    expect(misroute!.work).toMatchObject({ traceId: gone, name: '(origin trace not found)' });
  });

  it("a trace holding two conversations' work (a delivery that reached a gateway with its traceparent) is judged from the nearest work root", async () => {
    const a = turnTrace(A);
    const toBridge = storedSpan({ name: 'gateway.deliver', traceId: a.traceId, parentSpanId: a.turn.spanId, attributes: deliverAttributes('a/1', 'reply', 'origin', A, A) });
    const bMessage = storedSpan({ name: 'gateway.message', traceId: a.traceId, parentSpanId: toBridge.spanId, attributes: stamped(...B) });
    const bTurn = storedSpan({ name: 'agent.turn', traceId: a.traceId, parentSpanId: bMessage.spanId, attributes: stamped(...B) });
    const bReply = storedSpan({ name: 'gateway.deliver', traceId: a.traceId, parentSpanId: bTurn.spanId, attributes: deliverAttributes('b/1', 'reply', 'origin', B, B) });
    expect(await findMisroutes([traceOf(a.message, a.turn, toBridge, bMessage, bTurn, bReply)], sourceWith())).toEqual([]);
  });

  it('one finding per delivery: a replayed turn flags it again; an outbox retry that sent it makes it sent', async () => {
    const turn = turnTrace(A, 1_000);
    const failed = storedSpan({
      name: 'gateway.deliver',
      traceId: turn.traceId,
      parentSpanId: turn.turn.spanId,
      startMs: 1_010,
      attributes: deliverAttributes('m/9', 'reply', 'origin', A, B),
      events: [mismatchEvent(A, B), { name: 'exception', timeMs: 1_011, attributes: { 'exception.type': 'TL_DELIVERY_FAILED' } }],
    });
    const replay = turnTrace(A, 9_000);
    const replayed = storedSpan({
      name: 'gateway.deliver',
      traceId: replay.traceId,
      parentSpanId: replay.turn.spanId,
      startMs: 9_010,
      attributes: { ...deliverAttributes('m/9', 'reply', 'origin', A, B), 'delivery.replayed': true },
      events: [mismatchEvent(A, B)],
    });
    const traces = [traceOf(turn.message, turn.turn, failed), traceOf(replay.message, replay.turn, replayed)];
    const [only, ...more] = await findMisroutes(traces, sourceWith());
    expect(more).toEqual([]);
    expect(only).toMatchObject({ deliveryId: 'm/9', outcome: 'failed', delivery: { spanId: failed.spanId } });
    const retry = storedSpan({ name: 'gateway.deliver', traceId: hexId(32), startMs: 5_000, attributes: { ...deliverAttributes('m/9', 'reply', 'origin', A, B), 'delivery.attempt': 2 } });
    expect((await findMisroutes([...traces, traceOf(retry)], sourceWith()))[0]!.outcome).toBe('sent');
  });

  it('an origin span missing from a trace the window cut is fetched; an origin id that is not hex is ignored', async () => {
    const origin = turnTrace(A, 1_000);
    const stranger = turnTrace(B, 2_000);
    const deliver = (traceId: unknown) =>
      storedSpan({
        name: 'gateway.deliver',
        traceId: stranger.traceId,
        parentSpanId: stranger.turn.spanId,
        attributes: { ...deliverAttributes('x/1', 'reply', 'origin', A, B), 'delivery.origin.trace_id': traceId as string, 'delivery.origin.span_id': origin.tool.spanId },
        events: [mismatchEvent(A, B)],
      });
    const cut = traceOf(origin.message); // the window kept the root only
    const source = sourceWith([traceOf(origin.message, origin.turn, origin.tool)]);
    const [found] = await findMisroutes([cut, traceOf(stranger.message, stranger.turn, deliver(origin.traceId))], source);
    expect(found!.work).toMatchObject({ kind: 'turn', spanId: origin.message.spanId });
    expect(source.asked).toEqual([origin.traceId]);
    const [hostile] = await findMisroutes([traceOf(stranger.message, stranger.turn, deliver('\u001b]0;pwned\u0007'))], sourceWith());
    expect(hostile!.work).toMatchObject({ traceId: stranger.traceId, name: 'gateway.message' });
  });

  it('off privacy: platforms only, and a flagged delivery is still found', async () => {
    const turn = turnTrace(A);
    const deliver = storedSpan({
      name: 'gateway.deliver',
      traceId: turn.traceId,
      parentSpanId: turn.turn.spanId,
      attributes: { 'chat.platform': 'webhook', 'delivery.id': 'm/1', 'delivery.target': 'origin', 'routing.destination.platform': 'slack', 'routing.origin.platform': 'webhook' },
      events: [{ name: 'routing.mismatch', timeMs: 1, attributes: { 'routing.origin.platform': 'webhook', 'routing.destination.platform': 'slack' } }],
    });
    const [misroute] = await findMisroutes([traceOf(turn.message, turn.turn, deliver)], sourceWith());
    expect(misroute).toMatchObject({ origin: { platform: 'webhook' }, destination: { platform: 'slack' } });
    expect(misroute!.origin.chatId).toBeUndefined();
  });
});

describe('findMisroutes and forensic copies (traces not sampled)', () => {
  /** A gateway.deliver span as its forensic copy is exported: alone in a trace of its own, naming the dropped one. */
  function copyOf(traceId: string, spanId: string, attributes: Record<string, string>, events = [] as ReturnType<typeof mismatchEvent>[]) {
    return storedSpan({
      name: 'threadline.forensic',
      traceId: hexId(32),
      status: 'error',
      attributes: {
        ...attributes,
        'threadline.forensic.reason': 'misroute',
        'threadline.forensic.span_name': 'gateway.deliver',
        'threadline.forensic.trace_id': traceId,
        'threadline.forensic.span_id': spanId,
      },
      events,
    });
  }

  it('reads a copy flagged by the guard as its delivery, the work in the trace that was not sampled', async () => {
    const dropped = hexId(32);
    const droppedSpan = hexId(16);
    const copy = copyOf(dropped, droppedSpan, { ...deliverAttributes('m1/leak', 'reply', 'origin', B, B), 'delivery.origin.trace_id': dropped, 'delivery.origin.span_id': hexId(16) } as Record<string, string>, [mismatchEvent(A, B)]);
    const source = sourceWith();
    const [misroute, ...more] = await findMisroutes([traceOf(copy)], source);
    expect(more).toEqual([]);
    expect(misroute).toMatchObject({
      deliveryId: 'm1/leak',
      origin: { chatId: 'chat-a' },
      destination: { chatId: 'chat-b' },
      detectedBy: 'guard',
      delivery: { traceId: copy.traceId, name: 'gateway.deliver' },
      work: { traceId: dropped, name: '(trace not sampled)' },
      sampledOut: { traceId: dropped, spanId: droppedSpan },
    });
    expect(source.asked).toEqual([dropped]);
  });

  it('reads a copy sent elsewhere than its stamped conversation as a misroute found by its trace', async () => {
    const dropped = hexId(32);
    // Stamped with its origin, routed to B: the kind the ForensicSpanProcessor keeps without a guard event.
    const copy = copyOf(dropped, hexId(16), { ...deliverAttributes('m2/1', 'reply', 'origin', A, B), ...stamped(...A) } as Record<string, string>);
    const [misroute] = await findMisroutes([traceOf(copy)], sourceWith());
    expect(misroute).toMatchObject({ deliveryId: 'm2/1', detectedBy: 'trace', origin: { chatId: 'chat-a' }, destination: { chatId: 'chat-b' }, work: { traceId: dropped } });
  });
});
