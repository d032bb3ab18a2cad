// The store beside the traces: what it holds as sent is not lost, and a store that cannot be read is exit 2, not "found".
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanStatusCode } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { FileSpanExporter } from '../../src/telemetry/index.js';
import { webhookOrigin } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('misroutes-store');

async function run(argv: string[]) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env: {} });
  return { code, out, err };
}

/** A trace file whose only delivery, `d-1`, failed its first attempt a minute ago; its send is not in the file. */
async function tracesWithAFailedAttempt(dir: string): Promise<string> {
  const path = join(dir, 'traces.jsonl');
  const exporter = new FileSpanExporter(path);
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'threadline' }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const span = provider.getTracer('test').startSpan('gateway.deliver', {
    startTime: Date.now() - 60_000,
    attributes: {
      'chat.platform': 'webhook',
      'chat.id': 'a',
      'delivery.id': 'd-1',
      'delivery.kind': 'reply',
      'delivery.target': 'origin',
      'routing.destination.platform': 'webhook',
      'routing.destination.chat.id': 'a',
      'routing.origin.platform': 'webhook',
      'routing.origin.chat.id': 'a',
    },
  });
  span.recordException({ name: 'DeliveryError', code: 'TL_DELIVERY_FAILED', message: 'receiver answered 503' });
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'receiver answered 503' });
  span.end(Date.now() - 59_000);
  await provider.shutdown();
  return path;
}

/** A data dir whose store holds d-1 as sent (done). */
async function storeWithD1Done(dir: string): Promise<void> {
  const store = await SqliteStore.open(join(dir, 'threadline.db'));
  const lease = Date.now() + 60_000;
  await store.outbox.add({ id: 'd-1', kind: 'reply', destination: { platform: 'webhook', chatId: 'a' }, text: 'hi', origin: webhookOrigin('a', 'tl_x'), createdAt: Date.now() - 60_000 }, lease);
  await store.outbox.markDone('d-1', lease);
  await store.close();
}

describe('threadline misroutes with the store', () => {
  it('reports from the traces a delivery begun and never seen sent, unless the store holds it as sent', async () => {
    const dir = mkdtempSync(join(tempRoot(), 'data-'));
    const file = await tracesWithAFailedAttempt(dir);
    const alone = await run(['misroutes', '--file', file, '--lost-after', '1s', '--no-store', '--json']);
    expect(alone.code).toBe(1);
    expect((JSON.parse(alone.out) as { lost: { id: string }[] }).lost.map((work) => work.id)).toEqual(['d-1']);

    await storeWithD1Done(dir);
    const withStore = await run(['misroutes', '--file', file, '--lost-after', '1s', '--data-dir', dir, '--json']);
    expect(withStore.err).toBe('');
    expect(withStore.code).toBe(0);
    expect(JSON.parse(withStore.out)).toMatchObject({ misroutes: [], lost: [], store: dir });
  });

  it('exits 2 with one line when the store cannot be read, never 1 ("found")', async () => {
    const dir = mkdtempSync(join(tempRoot(), 'broken-'));
    const file = await tracesWithAFailedAttempt(dir);
    writeFileSync(join(dir, 'threadline.db'), 'this is not a SQLite database, it only has its name');
    const result = await run(['misroutes', '--file', file, '--lost-after', '1s', '--data-dir', dir]);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^threadline: .*\[TL_STORE_FAILED\]\n$/);
  });
});
