import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { pseudonymize } from '../../src/telemetry/index.js';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { isolatedEnv, runGatewayProcess } from '../helpers/gateway-process.js';
import { readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * The gateway as `npm start` runs it (register, then cli/main), webhook platform, trace file
 * exporter, under THREADLINE_SPAN_PRIVACY=hmac and =off: the gateway.deliver spans (the
 * router's first attempt and the outbox's retry) carry no plain chat, thread or user id in
 * chat.*, user.id, routing.destination.* or delivery.destination, and the trace file holds
 * them nowhere.
 */
const tempDir = useTempDir('span-privacy');
const KEY = 'span-privacy-e2e-key-0123456789';
const TOKEN = 'span-privacy-e2e-token';
/** A ':' and a space, so that delivery.destination percent-encodes them. */
const CHAT = 'team:ops room-4711';
const THREAD = 'topic:9123';
const USER = 'user:ada-5813';

type Privacy = 'hmac' | 'off';

interface Run {
  readonly output: string;
  readonly code: number | null;
  readonly trace: string;
  readonly delivers: OtlpSpan[];
}

async function runGateway(privacy: Privacy): Promise<Run> {
  const dataDir = join(tempDir(), privacy);
  const receiver = await DeliveryReceiver.start();
  // The first attempt fails: the retry is a second gateway.deliver, started by the outbox loop.
  receiver.failNext(1, 503);
  const env = isolatedEnv({
    THREADLINE_DATA_DIR: dataDir,
    THREADLINE_SPAN_PRIVACY: privacy,
    ...(privacy === 'hmac' ? { THREADLINE_SPAN_HMAC_KEY: KEY } : {}),
    THREADLINE_DELIVERY_BACKOFF_MS: '20',
    THREADLINE_WEBHOOK_TOKEN: TOKEN,
    THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
  });
  const { output, code } = await runGatewayProcess(env, async (base, soFar) => {
    const answer = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ chat_id: CHAT, thread_id: THREAD, user_id: USER, chat_type: 'group', text: 'hello' }),
    });
    expect(answer.status, soFar()).toBe(202);
    await receiver.waitFor(1);
  });
  await receiver.close();
  const path = join(dataDir, 'traces.jsonl');
  return { output, code, trace: readFileSync(path, 'utf8'), delivers: readOtlpSpans(path).filter((span) => span.name === 'gateway.deliver') };
}

/** Every way the trace file could spell an id: raw, percent-encoded (delivery.destination), JSON-escaped. */
function spellings(id: string): string[] {
  return [...new Set([id, encodeURIComponent(id), JSON.stringify(id).slice(1, -1)])];
}

describe.each<Privacy>(['hmac', 'off'])('THREADLINE_SPAN_PRIVACY=%s, as npm start runs it', (privacy) => {
  let run: Run;
  beforeAll(async () => {
    run = await runGateway(privacy);
  }, 60_000);

  it('no gateway.deliver span (first attempt and retry) names the chat, thread or user in clear', () => {
    expect(run.code, run.output).toBe(0);
    expect(run.delivers.map(attempt), run.output).toEqual([1, 2]);
    const p = (id: string) => pseudonymize(id, KEY);
    for (const span of run.delivers) {
      const attributes = Object.fromEntries(span.attributes.map((entry) => [entry.key, entry.value.stringValue]));
      if (privacy === 'hmac') {
        expect(attributes).toMatchObject({
          'chat.id': p(CHAT),
          'chat.thread.id': p(THREAD),
          'user.id': p(USER),
          'routing.destination.platform': 'webhook',
          'routing.destination.chat.id': p(CHAT),
          'routing.destination.chat.thread.id': p(THREAD),
          'delivery.destination': `webhook:${p(CHAT)}:${p(THREAD)}`,
        });
      } else {
        expect(attributes).toMatchObject({ 'routing.destination.platform': 'webhook', 'delivery.destination': 'webhook' });
        for (const key of ['chat.id', 'chat.thread.id', 'user.id', 'routing.destination.chat.id', 'routing.destination.chat.thread.id']) {
          expect(attributes[key], key).toBeUndefined();
        }
      }
    }
  });

  it('the trace file holds the chat, thread and user ids nowhere', () => {
    for (const form of [CHAT, THREAD, USER].flatMap(spellings)) {
      const at = run.trace.indexOf(form);
      expect(at < 0 ? '' : run.trace.slice(Math.max(0, at - 200), at + 100), `found ${form}`).toBe('');
    }
  });
});

/** delivery.attempt is an int: OTLP/JSON writes it as intValue. */
function attempt(span: OtlpSpan): number | undefined {
  const value = (span.attributes.find((entry) => entry.key === 'delivery.attempt')?.value as { intValue?: number | string } | undefined)?.intValue;
  return value === undefined ? undefined : Number(value);
}
