import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTestTelemetry, startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';

// Ids with the characters that broke other gateways' keys: ':' '/' and non-ASCII.
function chatOf(index: number): { chat_id: string; thread_id?: string } {
  const chat_id = [`-100${index}:topic`, `team/${index}`, `чат-${index}`, `${index}🧵`][index % 4]!;
  return index % 3 === 0 ? { chat_id } : { chat_id, thread_id: `t:${index % 7}/ü` };
}

describe('webhook routing under load', () => {
  let gateway: TestGateway;
  let protobufReceiver: OtlpReceiver;
  let jsonReceiver: OtlpReceiver;
  beforeAll(async () => {
    protobufReceiver = await OtlpReceiver.start();
    jsonReceiver = await OtlpReceiver.start();
    // Spans also leave through the OTLP exporters a gateway uses, one per encoding (protobuf
    // and JSON), and are decoded as a collector would.
    installTestTelemetry([
      new BatchSpanProcessor(new OtlpProtobufExporter({ url: protobufReceiver.url }), { maxQueueSize: 20_000 }),
      new BatchSpanProcessor(new OtlpJsonExporter({ url: jsonReceiver.url }), { maxQueueSize: 20_000 }),
    ]);
    gateway = await startTestGateway({ env: { THREADLINE_CONCURRENCY: '64' } });
  });
  afterAll(async () => {
    await gateway.stop();
    await Promise.all([protobufReceiver.close(), jsonReceiver.close()]);
  });

  it('delivers 1,000 concurrent replies each to its own chat and thread, with matching baggage and spans', async () => {
    const messages = Array.from({ length: 1000 }, (_, i) => ({ ...chatOf(i % 200), text: `message ${i}` }));
    const answers = await Promise.all(messages.map((message) => gateway.send(message)));
    expect(answers.map((answer) => answer.status)).toEqual(messages.map(() => 202));

    const deliveries = await gateway.receiver.waitFor(1000);
    const byText = new Map(deliveries.map((delivery) => [delivery.body.text, delivery]));
    messages.forEach((message, i) => {
      const delivery = byText.get(message.text);
      expect(delivery, message.text).toBeDefined();
      expect(delivery!.body.chat_id).toBe(message.chat_id);
      expect(delivery!.body.thread_id).toBe(message.thread_id ?? null);
      expect(delivery!.body.kind).toBe('reply');
      expect(delivery!.body.trace_id).toBe(answers[i]!.body['trace_id']);
      expect(delivery!.baggage['chat.id']).toBe(message.chat_id);
      expect(delivery!.baggage['chat.thread.id']).toBe(message.thread_id);
      expect(delivery!.baggage['session.id']).toBe(answers[i]!.body['session_id']);
    });

    for (const [i, answer] of answers.entries()) {
      const traceId = answer.body['trace_id'] as string;
      const spans = await gateway.waitForSpans(traceId, ['gateway.message', 'agent.turn', 'gateway.deliver']);
      expect(spans.length).toBeGreaterThanOrEqual(3);
      expect(await gateway.routingProblems(traceId, { chatId: messages[i]!.chat_id, threadId: messages[i]!.thread_id })).toEqual([]);
    }
    expect(gateway.running.gateway.router.mismatches()).toBe(0);

    await gateway.telemetry.flush();
    const expected = new Map(answers.map((answer, i) => [answer.body['trace_id'] as string, messages[i]!]));
    for (const receiver of [protobufReceiver, jsonReceiver]) {
      const pipeline = receiver.spans.filter((span) => expected.has(span.traceId));
      expect(pipeline.length).toBeGreaterThanOrEqual(3 * 1000);
      for (const span of pipeline) {
        const message = expected.get(span.traceId)!;
        expect(span.attributes['chat.id'], span.name).toBe(message.chat_id);
        expect(span.attributes['chat.thread.id'], span.name).toBe(message.thread_id);
      }
    }
    expect([...protobufReceiver.contentTypes]).toEqual(['application/x-protobuf']);
    expect([...jsonReceiver.contentTypes]).toEqual(['application/json']);
  });
});
