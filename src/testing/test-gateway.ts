import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Agent } from '../agent/agent.js';
import { readGatewayConfig } from '../gateway/gateway-config.js';
import { startGateway, type RunningGateway } from '../gateway/start-gateway.js';
import type { WebhookMessageBody } from '../platforms/webhook/webhook-schema.js';
import { names } from '../session/index.js';
import { createLogger } from '../telemetry/logger.js';
import { DeliveryReceiver } from './delivery-receiver.js';
import { installTestTelemetry, type TestTelemetry } from './test-telemetry.js';

export interface TestGatewayOptions {
  /** Extra configuration variables, as the gateway would read them from the environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly agent?: Agent;
}

export interface SendResult {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export interface ExpectedRouting {
  readonly chatId: string;
  readonly threadId?: string | undefined;
}

/** A gateway running in this process for a test, with everything it talks to. */
export interface TestGateway {
  readonly url: string;
  readonly receiver: DeliveryReceiver;
  readonly telemetry: TestTelemetry;
  readonly running: RunningGateway;
  /** POSTs a webhook message as the given chat and thread. */
  send(message: WebhookMessageBody, headers?: Readonly<Record<string, string>>): Promise<SendResult>;
  /** Resolves with the trace's spans once spans of all `names` have ended. */
  waitForSpans(traceId: string, names: readonly string[], timeoutMs?: number): Promise<ReadableSpan[]>;
  /**
   * Waits for the message's trace to finish (its gateway.message span ends last), then lists
   * the spans that do not carry the expected chat.id and chat.thread.id: [] when all do.
   */
  routingProblems(traceId: string, expected: ExpectedRouting): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Starts a gateway on an ephemeral loopback port with a temporary SQLite store, spans in
 * memory and a local delivery receiver, for integration tests of threadline and of what
 * users build on it.
 */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const telemetry = installTestTelemetry();
  const receiver = await DeliveryReceiver.start();
  const dataDir = mkdtempSync(join(tmpdir(), 'threadline-test-'));
  const config = readGatewayConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    THREADLINE_DATA_DIR: dataDir,
    THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
    THREADLINE_DELIVERY_BACKOFF_MS: '20',
    THREADLINE_DELIVERY_BACKOFF_MAX_MS: '200',
    ...options.env,
  });
  const logger = createLogger({ level: process.env['THREADLINE_LOG_LEVEL'] ?? 'silent' });
  const running = await startGateway(config, { logger, ...(options.agent ? { agent: options.agent } : {}) });
  const messagesUrl = `${running.url}/v1/messages`;

  async function waitForSpans(traceId: string, wanted: readonly string[], timeoutMs = 10_000): Promise<ReadableSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = telemetry.spans(traceId);
      if (wanted.every((name) => spans.some((span) => span.name === name))) return spans;
      if (Date.now() > deadline) throw new Error(`Trace ${traceId} lacks ${wanted.join(', ')} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  return {
    url: running.url,
    receiver,
    telemetry,
    running,
    send: async (message, headers = {}) => {
      const response = await fetch(messagesUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(message),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
    },
    waitForSpans,
    routingProblems: async (traceId, expected) => {
      const spans = await waitForSpans(traceId, ['gateway.message']);
      return spans
        .filter(
          (span) =>
            span.attributes[names.CHAT_ID] !== expected.chatId ||
            span.attributes[names.CHAT_THREAD_ID] !== expected.threadId,
        )
        .map(
          (span) =>
            `${span.name}: chat.id=${String(span.attributes[names.CHAT_ID])} chat.thread.id=${String(span.attributes[names.CHAT_THREAD_ID])}`,
        );
    },
    stop: async () => {
      await running.stop();
      await receiver.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
