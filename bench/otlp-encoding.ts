/**
 * npm run bench:encoding — encoding spans as OTLP protobuf: threadline's one-pass encoder
 * against @opentelemetry/otlp-transformer's ProtobufTraceSerializer, interleaved round by
 * round (harness.ts), on the three spans a webhook message makes (gateway.message,
 * agent.turn, gateway.deliver, stamped with a session's routing, as the gateway ends them).
 * Checks first that both write the same bytes. Prints µs per span and the ratio.
 */
import { SpanKind, context, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { createSession, withSession } from '../src/session/index.js';
import { SessionSpanProcessor, installContext } from '../src/telemetry/index.js';
import { encodeTraceExportRequest } from '../src/telemetry/otlp-trace-encoder.js';
import { interleave, median, series, type Plan } from './harness.js';

installContext();

/** Spans per export request: what a busy gateway hands the exporter in one batch is larger; per span it is the same. */
const SPANS_PER_REQUEST = 96;
const PLAN: Plan = { batchNs: 2_000_000, warmupRounds: 100, rounds: 1_000 };

function messageSpans(exporter: InMemorySpanExporter, n: number): void {
  const tracer = trace.getTracer('threadline');
  const chat = n % 200;
  const session = createSession({
    platform: 'webhook',
    chatType: 'dm',
    chatId: `chat:${chat}`,
    ...(chat % 2 === 0 ? { threadId: `t/${chat}` } : {}),
    messageId: `m${n}`,
  });
  withSession(session, () => {
    const message = tracer.startSpan('gateway.message', {
      kind: SpanKind.SERVER,
      attributes: { 'messaging.message.id': `0193c0de-0000-7000-8000-${String(n).padStart(12, '0')}`, 'threadline.inbound.baggage.dropped': 0 },
    });
    context.with(trace.setSpan(context.active(), message), () => {
      tracer.startActiveSpan('agent.turn', (turn) => {
        tracer.startActiveSpan('gateway.deliver', { kind: SpanKind.CLIENT }, (deliver) => {
          deliver.setAttributes({
            'delivery.id': `0193c0de-0000-7000-8000-${String(n).padStart(12, '0')}/1`,
            'delivery.kind': 'reply',
            'delivery.attempt': 1,
            'routing.destination.platform': 'webhook',
            'routing.destination.chat.id': `chat:${chat}`,
            ...(chat % 2 === 0 ? { 'routing.destination.chat.thread.id': `t/${chat}` } : {}),
          });
          deliver.end();
        });
        turn.end();
      });
    });
    message.end();
  });
  void exporter;
}

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SessionSpanProcessor(), new SimpleSpanProcessor(exporter)] }),
);
for (let n = 0; exporter.getFinishedSpans().length < SPANS_PER_REQUEST; n++) messageSpans(exporter, n);
const spans: ReadableSpan[] = exporter.getFinishedSpans().slice(0, SPANS_PER_REQUEST);

const library = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
const ours = Buffer.from(encodeTraceExportRequest(spans));
if (!library.equals(ours)) throw new Error('the two encoders wrote different bytes; fix the encoder before timing it');

let sink = 0;
const samples = interleave(
  [
    { name: 'library', run: (ops) => { for (let i = 0; i < ops; i++) sink += ProtobufTraceSerializer.serializeRequest(spans)!.length; } },
    { name: 'ours', run: (ops) => { for (let i = 0; i < ops; i++) sink += encodeTraceExportRequest(spans).length; } },
  ],
  PLAN,
);
if (sink === 0) throw new Error('nothing was encoded');

const perSpan = (name: string) => median(series(samples, name)) / SPANS_PER_REQUEST / 1000;
const libraryUs = perSpan('library');
const oursUs = perSpan('ours');
console.log(`threadline bench:encoding — Node ${process.version}, ${PLAN.rounds} rounds, ${SPANS_PER_REQUEST} spans a request, ${(ours.length / SPANS_PER_REQUEST).toFixed(0)} bytes a span`);
console.log(`otlp-transformer ProtobufTraceSerializer  ${libraryUs.toFixed(2)} µs/span`);
console.log(`threadline encodeTraceExportRequest       ${oursUs.toFixed(2)} µs/span`);
console.log(`RESULT encoding_vs_library=${(oursUs / libraryUs).toFixed(2)}`);
console.log(`RESULT encoding_us_per_span=${oursUs.toFixed(2)}`);
