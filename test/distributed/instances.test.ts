import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { collectOutput, spawnGateway, type StartedGateway } from '../helpers/gateway-process.js';
import { arrivalOrder, sharedInstanceEnv, startInstanceProcess } from '../helpers/instances.js';
import { otlpAttribute, readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';
import { startRedisServer, useRedis } from '../helpers/redis.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const redis = useRedis();

interface Instance extends StartedGateway {
  readonly dataDir: string;
  spans(): OtlpSpan[];
}

/** One gateway process on the shared Redis, with a data dir (and trace file) of its own. */
async function startInstance(name: string, shared: Record<string, string>, env: Record<string, string> = {}): Promise<Instance> {
  const started = await startInstanceProcess(name, { ...shared, ...env }, cleanups);
  return { ...started, spans: () => readOtlpSpans(join(started.dataDir, 'traces.jsonl')) };
}

async function post(url: string, body: object, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await response.body?.cancel();
  return response.status;
}

/**
 * Posts each chat's messages one after another (so their order is defined), the chats side by
 * side, spread over `urls`. A post whose instance is gone is sent to the next one with the same
 * Idempotency-Key, as a client behind a load balancer retries: the shared dedupe keeps it one message.
 */
async function postInOrder(urls: readonly string[], chats: number, perChat: number): Promise<Map<string, string[]>> {
  const sent = new Map<string, string[]>();
  await Promise.all(
    Array.from({ length: chats }, async (_, chat) => {
      const texts: string[] = [];
      sent.set(`c${chat}`, texts);
      for (let i = 0; i < perChat; i++) {
        const text = `c${chat} m${i}`;
        let status: number | undefined;
        for (let attempt = 0; status === undefined && attempt < urls.length; attempt++) {
          const url = urls[(chat + i + attempt) % urls.length]!;
          status = await post(url, { chat_id: `c${chat}`, thread_id: 't', text }, { 'idempotency-key': `k-${text}` }).catch(() => undefined);
        }
        expect(status).toBe(202);
        texts.push(text);
      }
    }),
  );
  return sent;
}

describe('several gateway instances on one Redis', () => {
  it('A accepts, B runs the turn, C delivers: each chat in order, every span tagged, producer and consumer linked', async () => {
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups);
    const [a, b, c] = await Promise.all([
      startInstance('a', shared, { THREADLINE_WORKERS: 'none' }),
      startInstance('b', shared, { THREADLINE_WORKERS: 'turns' }),
      startInstance('c', shared, { THREADLINE_WORKERS: 'deliveries' }),
    ]);
    const sent = await postInOrder([a.url], 4, 6);
    await receiver.waitFor(24);
    expect(arrivalOrder(receiver)).toEqual(sent);
    for (const instance of [a, b, c]) {
      instance.child.kill('SIGTERM');
      expect(await instance.exited).toBe(0);
    }

    const [onA, onB, onC] = [a.spans(), b.spans(), c.spans()];
    // Who did what: A only accepted, B only ran turns, C only sent.
    expect(new Set(onA.map((span) => span.name))).toEqual(new Set(['gateway.message']));
    expect(onB.filter((span) => span.name === 'gateway.turn')).toHaveLength(24);
    expect(onB.some((span) => span.name === 'gateway.message')).toBe(false);
    const sends = onC.filter((span) => span.name === 'gateway.deliver');
    expect(sends).toHaveLength(24);
    for (const span of [...onA, ...onB, ...onC]) {
      expect(otlpAttribute(span, 'chat.id'), span.name).toMatch(/^c[0-3]$/);
      expect(otlpAttribute(span, 'chat.thread.id'), span.name).toBe('t');
    }
    // One trace per message: accept (A) → turn (B) → send (C), each consumer a child of its producer and linked to it.
    const byId = new Map([...onA, ...onB, ...onC].map((span) => [span.spanId, span]));
    for (const send of sends) {
      const producer = byId.get(send.parentSpanId!)!;
      expect(producer.name).toBe('gateway.deliver');
      expect((send as OtlpSpan & { links?: { spanId: string }[] }).links?.map((link) => link.spanId)).toContain(producer.spanId);
      let root = producer;
      while (root.parentSpanId !== undefined && byId.has(root.parentSpanId)) root = byId.get(root.parentSpanId)!;
      expect(root.name).toBe('gateway.message');
      expect(onA).toContain(root);
      expect(root.traceId).toBe(send.traceId);
    }
  });

  it('kill -9 of an instance mid-work: nothing accepted is lost or misrouted, each chat keeps its order', async () => {
    const { receiver, shared } = await sharedInstanceEnv(redis, cleanups, {
      // The survivor takes the lost instance's turns and deliveries over within this.
      THREADLINE_INSTANCE_LEASE_MS: '1500',
    });
    const [a, b] = await Promise.all([startInstance('a', shared), startInstance('b', shared)]);
    const sending = postInOrder([a.url, b.url], 5, 8);
    await receiver.waitFor(6);
    b.child.kill('SIGKILL');
    await b.exited;
    const sent = await sending;
    await receiver.waitFor(40, 30_000);
    expect(arrivalOrder(receiver)).toEqual(sent);
    for (const { body } of receiver.received) expect(body.text.startsWith(`${body.chat_id} `)).toBe(true);
  });

  it('refuses to start when Redis cannot be reached or would evict accepted work, exit 1 with a clear line', async () => {
    const closed = await startRedisServer();
    await closed.stop();
    const evicting = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    for (const [url, expected] of [
      [`redis://:hunter2@127.0.0.1:${closed.port}`, /Cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ \(ECONNREFUSED\).*\[TL_REDIS_UNAVAILABLE\]/],
      [evicting.url, /maxmemory-policy.*noeviction.*\[TL_REDIS_UNSUITABLE\]/s],
    ] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), 'threadline-instance-refused-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const child = spawnGateway({ ...process.env, PORT: '0', THREADLINE_DATA_DIR: dataDir, THREADLINE_REDIS_URL: url, THREADLINE_REDIS_PREFIX: redis.prefix() });
      const { stderr, output, exited } = collectOutput(child);
      expect(await exited).toBe(1);
      expect(stderr()).toMatch(expected);
      expect(output()).not.toContain('hunter2');
    }
  });

  it('while Redis is away intake answers 503 and nothing crashes; once it is back, messages flow again', async () => {
    const server = await startRedisServer({ appendonly: true });
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const gateway = await startInstance('solo', { THREADLINE_REDIS_URL: server.url, THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url });
    expect(await post(gateway.url, { chat_id: 'c', text: 'before' })).toBe(202);
    await receiver.waitFor(1);
    await server.stop();
    const refused = await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'c', text: 'during' }) });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('TL_REDIS_UNAVAILABLE');
    await server.restart();
    // Intake answers again once the commands' connection is back; the workers reconnect by themselves.
    let status = 0;
    const deadline = Date.now() + 15_000;
    while (status !== 202 && Date.now() < deadline) {
      status = await post(gateway.url, { chat_id: 'c', text: 'after' });
      if (status !== 202) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(202);
    const delivered = await receiver.waitFor(2, 20_000);
    expect(delivered.map((d) => d.body.text)).toEqual(['before', 'after']);
    expect(gateway.child.exitCode).toBeNull();
  });
});
