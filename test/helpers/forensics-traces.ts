/**
 * A trace file as the gateway writes it (FileSpanExporter, one OTLP/JSON request a line) with
 * the shapes the forensics commands look for: a turn and its reply, a cron run delivering to
 * the wrong chat (an errored gateway.deliver with a routing.mismatch event and a link to its
 * origin), a conversation span in a thread, and a delivery of another service.
 */
import { join } from 'node:path';
import { SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, RandomIdGenerator, SimpleSpanProcessor, type IdGenerator } from '@opentelemetry/sdk-trace-base';
import { FileSpanExporter } from '../../src/telemetry/index.js';

export interface ForensicsTraces {
  /** The trace file. */
  readonly path: string;
  /** When the first span started, ms since the epoch; every span starts within 10 s of it. */
  readonly startMs: number;
  /** The trace ids, lowercase hex. */
  readonly turn: string;
  readonly misroute: string;
  readonly thread: string;
  readonly otherService: string;
  /** A reply in chat c4, newer than the misroute: errors come first all the same. */
  readonly later: string;
  /** The turn's gateway.deliver span id, the origin the misrouted cron run links to. */
  readonly turnDeliverSpanId: string;
}

/** The first trace id has its high 64 bits zero: Jaeger writes such an id with 16 digits, Tempo without leading zeros. */
class ShortFirstTraceId implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private first = true;
  generateTraceId(): string {
    if (!this.first) return this.random.generateTraceId();
    this.first = false;
    return `0000000000000000${this.random.generateSpanId()}`;
  }
  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

function routing(chat: string, thread?: string): Record<string, string> {
  return {
    'chat.platform': 'telegram',
    'chat.id': chat,
    ...(thread === undefined ? {} : { 'chat.thread.id': thread }),
    'chat.type': 'private',
    'user.id': 'u1',
    'session.id': `s-${chat}`,
  };
}

/** Writes the traces to `dir`/traces.jsonl and says what is in it. */
export async function writeForensicsTraces(dir: string, startMs = Date.now() - 60_000): Promise<ForensicsTraces> {
  const path = join(dir, 'traces.jsonl');
  const exporter = new FileSpanExporter(path);
  const provider = (service: string, idGenerator?: IdGenerator) =>
    new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': service }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      ...(idGenerator ? { idGenerator } : {}),
    });
  const gateway = provider('threadline', new ShortFirstTraceId());
  const other = provider('other-gateway');
  const tracer = gateway.getTracer('threadline', '0.1.0');
  const at = (offsetMs: number) => startMs + offsetMs;
  const child = (parent: Span, name: string, startTime: number, attributes: Record<string, string | number | boolean>) =>
    tracer.startSpan(name, { startTime, attributes }, trace.setSpan(context.active(), parent));

  // A turn in chat c1, answered there.
  const message = tracer.startSpan('gateway.message', { startTime: at(0), attributes: routing('c1') });
  const turn = child(message, 'agent.turn', at(10), routing('c1'));
  const reply = child(turn, 'gateway.deliver', at(20), {
    ...routing('c1'),
    'delivery.id': 'd-reply',
    'delivery.kind': 'reply',
    'delivery.attempt': 1,
    'delivery.target': 'origin',
    'delivery.destination': 'telegram:c1',
    'routing.destination.platform': 'telegram',
    'routing.destination.chat.id': 'c1',
    'routing.origin.platform': 'telegram',
    'routing.origin.chat.id': 'c1',
  });
  reply.end(at(30));
  turn.end(at(40));
  message.end(at(50));

  // A cron run for c1 whose delivery went to c2: the guard's event and an ERROR status.
  const cron = tracer.startSpan('cron.run', {
    startTime: at(1_000),
    attributes: routing('c1'),
    links: [{ context: reply.spanContext() }],
  });
  const misrouted = child(cron, 'gateway.deliver', at(1_010), {
    ...routing('c1'),
    'delivery.id': 'd-cron',
    'delivery.kind': 'cron',
    'delivery.attempt': 2,
    'delivery.target': 'origin',
    'delivery.destination': 'telegram:c2',
    'routing.destination.platform': 'telegram',
    'routing.destination.chat.id': 'c2',
    'routing.origin.platform': 'telegram',
    'routing.origin.chat.id': 'c1',
    'delivery.origin.trace_id': reply.spanContext().traceId,
    'delivery.origin.span_id': reply.spanContext().spanId,
  });
  misrouted.addEvent(
    'routing.mismatch',
    { 'routing.origin.chat.id': 'c1', 'routing.destination.chat.id': 'c2', 'routing.origin.chat.thread.id': '' },
    at(1_015),
  );
  misrouted.setStatus({ code: SpanStatusCode.ERROR, message: 'destination differs from origin' });
  misrouted.end(at(1_020));
  cron.end(at(1_030));

  // A conversation in a thread of chat c3, no delivery.
  const threaded = tracer.startSpan('gateway.message', { startTime: at(2_000), attributes: routing('c3', 't9') });
  threaded.end(at(2_010));

  // Another service's delivery to c1: never a threadline finding.
  const foreign = other.getTracer('x').startSpan('gateway.deliver', { startTime: at(3_000), attributes: { ...routing('c1'), 'routing.origin.chat.id': 'c1' } });
  foreign.end(at(3_010));

  // A later turn in chat c4, answered there without error.
  const laterMessage = tracer.startSpan('gateway.message', { startTime: at(4_000), attributes: routing('c4') });
  const laterReply = child(laterMessage, 'gateway.deliver', at(4_010), {
    ...routing('c4'),
    'delivery.id': 'd-later',
    'delivery.kind': 'reply',
    'delivery.attempt': 1,
    'routing.destination.chat.id': 'c4',
    'routing.origin.chat.id': 'c4',
  });
  laterReply.end(at(4_020));
  laterMessage.end(at(4_030));

  await gateway.forceFlush();
  await other.forceFlush();
  await exporter.shutdown();
  return {
    path,
    startMs,
    turn: message.spanContext().traceId,
    misroute: cron.spanContext().traceId,
    thread: threaded.spanContext().traceId,
    otherService: foreign.spanContext().traceId,
    later: laterMessage.spanContext().traceId,
    turnDeliverSpanId: reply.spanContext().spanId,
  };
}
